"""``memoir demo``: a bundled sample corpus synced into a throwaway home, then a tour."""

__all__: list[str] = []
