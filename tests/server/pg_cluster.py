"""A throwaway PostgreSQL cluster of a test's own (initdb + pg_ctl in a temp folder, on a
free port), so the test may restart it: the shared test cluster must never be. Skips
only when the PostgreSQL server binaries are absent (``make test`` installs them)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .serve_proc import free_port

__all__ = ["Cluster", "pg_cluster"]


def _bin() -> Path | None:
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(found).parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class Cluster:
    """A running cluster: its URL, and ``restart()`` (fast: sessions are terminated)."""

    def __init__(self, bin_dir: Path, root: Path, port: int, as_pg: list[str]) -> None:
        self.bin_dir, self.root, self.port, self._as_pg = bin_dir, root, port, as_pg
        self.url = f"postgresql://memoir@127.0.0.1:{port}/postgres"

    def pg_ctl(self, *args: str) -> None:
        command = [*self._as_pg, str(self.bin_dir / "pg_ctl"), "-D", str(self.root / "data")]
        subprocess.run([*command, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_prepared_transactions=4"
        )
        self.pg_ctl("-l", str(self.root / "pg.log"), "-w", "-t", "60", "-o", options, "start")

    def restart(self) -> None:
        self.pg_ctl("-l", str(self.root / "pg.log"), "-m", "fast", "-w", "-t", "60", "restart")

    def stop(self) -> None:
        self.pg_ctl("-m", "immediate", "-w", "stop")


@contextmanager
def pg_cluster() -> Iterator[Cluster]:
    bin_dir = _bin()
    if bin_dir is None:
        pytest.skip("the PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    as_pg: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="memoir-pg-"))  # not under pytest's 0700 root
    if os.getuid() == 0:  # PostgreSQL refuses to run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run PostgreSQL")
        os.chown(root, owner.pw_uid, owner.pw_gid)
        as_pg = ["runuser", "-u", "postgres", "--"]
    try:
        subprocess.run(
            [
                *as_pg,
                str(bin_dir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                "memoir",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        cluster = Cluster(bin_dir, root, free_port(), as_pg)
        cluster.start()
        try:
            yield cluster
        finally:
            try:
                cluster.stop()
            except subprocess.SubprocessError:
                pass
    finally:
        shutil.rmtree(root, ignore_errors=True)
