"""verify: what it reports and what --repair fixes; the Memoir facade."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.errors import Busy
from memoir.ingest.archive import sync_lock

UUID_A = "aaaaaaaa-1111-4222-8333-444444444444"


@pytest.fixture
def src(tmp_path: Path) -> Path:
    (tmp_path / "projects" / "p").mkdir(parents=True)
    return tmp_path / "projects"


@pytest.fixture
def memoir(home: Path, src: Path) -> Iterator[Memoir]:
    m = Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(src,)))
    yield m
    m.close()


def _kinds(memoir: Memoir) -> list[str]:
    return sorted(p.kind for p in service.verify(memoir).problems)


def test_clean_home_verifies(memoir: Memoir, src: Path) -> None:
    (src / "p" / f"{UUID_A}.jsonl").write_bytes(ClaudeWriter(UUID_A).user("hi").bytes())
    report = memoir.sync()
    assert report.files_indexed == 1
    result = service.verify(memoir)
    assert result.ok and (result.sources_checked, result.archive_files) == (1, 1)


def test_unknown_record_type_is_only_a_warning(memoir: Memoir, src: Path) -> None:
    data = ClaudeWriter(UUID_A).user("hi").bytes() + b'{"type":"future-thing"}\n'
    (src / "p" / f"{UUID_A}.jsonl").write_bytes(data)
    memoir.sync()
    result = service.verify(memoir)
    assert result.ok
    assert [(w.kind, w.where.rsplit("/", 1)[-1]) for w in result.warnings] == [
        ("skipped_line", f"{UUID_A}.jsonl:2")
    ]


def test_missing_archive_is_recopied_from_the_source(memoir: Memoir, src: Path) -> None:
    path = src / "p" / f"{UUID_A}.jsonl"
    path.write_bytes(ClaudeWriter(UUID_A).user("hi").user("again").bytes())
    memoir.sync()
    archived = memoir.settings.archive_dir / "p" / f"{UUID_A}.jsonl"
    archived.unlink()
    assert _kinds(memoir) == ["archive_missing"]
    repaired = service.verify(memoir, repair=True)
    assert repaired.ok and repaired.repaired == 1
    assert archived.read_bytes() == path.read_bytes()
    assert len(memoir.store.events.of(UUID_A)) == 2  # nothing indexed twice


def test_index_behind_archive_reads_the_archive_when_the_source_is_gone(
    memoir: Memoir, src: Path
) -> None:
    path = src / "p" / f"{UUID_A}.jsonl"
    path.write_bytes(ClaudeWriter(UUID_A).user("kept").bytes())
    memoir.sync()
    path.unlink()
    archived = memoir.settings.archive_dir / "p" / f"{UUID_A}.jsonl"
    late = ClaudeWriter(UUID_A).user("only in the archive").bytes()
    with open(archived, "ab") as fp:
        fp.write(late)
    assert _kinds(memoir) == ["index_behind_archive"]
    assert service.verify(memoir, repair=True).ok
    assert [e.text for e in memoir.store.events.of(UUID_A)] == ["kept", "only in the archive"]


@pytest.mark.parametrize(
    ("name", "data", "detail"),
    [
        ("blob.json", b"\x00\x01\x02" * 50, "binary"),
        ("core.jsonl", b"\x7fELF\x00\x00\x01\x02" * 100, "binary"),
        ("notes.jsonl", b"just some notes, in no transcript format\n" * 3, "unknown_format"),
        ("data.json", b'{"weather": "sunny", "wind": 3}', "unknown_format"),
    ],
)
def test_a_stray_file_that_is_no_transcript_is_a_warning_not_damage(
    memoir: Memoir, src: Path, name: str, data: bytes, detail: str
) -> None:
    (src / "p" / name).write_bytes(data)
    report = memoir.sync()
    assert report.files_ignored == 1 and report.lines_skipped == 0  # a file, not a line
    verified = service.verify(memoir)
    assert verified.ok and verified.problems == []  # `memoir verify` exits 0
    assert [(w.kind, w.where) for w in verified.warnings] == [
        ("ignored_file", str(src / "p" / name))
    ]
    assert verified.warnings[0].detail.startswith(detail)


def test_facade_sync_takes_the_lock(memoir: Memoir) -> None:
    with sync_lock(memoir.settings.home), pytest.raises(Busy, match="another memoir sync"):
        memoir.sync()
