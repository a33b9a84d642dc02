"""A throwaway PostgreSQL cluster for the store tests and the store benchmark: ``initdb`` and
``pg_ctl`` from Debian's ``postgresql`` package (or whatever ``initdb`` is on ``PATH``), listening on
a Unix socket in a private directory only, run as ``nobody`` when we are root (PostgreSQL refuses
root), removed when stopped. :func:`start_cluster` says why it cannot start instead of failing."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

__all__ = ["Cluster", "start_cluster"]

_TIMEOUT = 60


def _bin_dir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


@dataclass
class Cluster:
    """A running cluster: its data directory, socket directory, and the user that runs it."""

    root: Path
    bin: Path
    run_as: list[str]
    durable: bool = False

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, schema: str | None = None) -> str:
        """A connection URL (over the Unix socket) whose ``search_path`` is ``schema`` when given."""
        url = f"postgresql://turnmemory@/turnmemory?host={quote(str(self.root), safe='')}"
        if schema is not None:
            url += "&options=" + quote(f"-csearch_path={schema}", safe="")
        return url

    def fresh_url(self) -> str:
        """The URL of a new, empty schema (a test's own tables, in the one cluster)."""
        import psycopg

        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f"CREATE SCHEMA {schema}")
        return self.url(schema)

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.run_as, str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-t", "30", *args],
            check=True,
            capture_output=True,
            timeout=_TIMEOUT,
        )

    def start(self) -> None:
        settings = f"-c listen_addresses='' -k {self.root} -c max_connections=200"
        if not self.durable:
            settings += " -c fsync=off -c full_page_writes=off"
        self._ctl("-l", str(self.root / "log"), "-o", settings, "start")

    def stop(self) -> None:
        """A clean, fast shutdown: every connection is cut, every acknowledged commit kept."""
        self._ctl("-m", "fast", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._ctl("-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(*, durable: bool = False) -> Cluster | str:
    """A started cluster, or why none can start here (to skip with). ``durable`` keeps PostgreSQL's
    fsync on (for measurements); tests run without it."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'turnmemory[postgres]')"
    bin_dir = _bin_dir()
    if bin_dir is None:
        return "no PostgreSQL server here (apt-get install postgresql)"
    root = Path(tempfile.mkdtemp(prefix="tm-pg-", dir="/tmp"))  # short: a socket path has 107 bytes
    run_as: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser") or shutil.which("setpriv")
        if runuser is None:
            shutil.rmtree(root, ignore_errors=True)
            return "running as root without runuser or setpriv to start PostgreSQL as nobody"
        run_as = (
            [runuser, "-u", "nobody", "--"]
            if runuser.endswith("runuser")
            else [runuser, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        )
        shutil.chown(root, "nobody")
    cluster = Cluster(root=root, bin=bin_dir, run_as=run_as, durable=durable)
    try:
        subprocess.run(
            [
                *run_as,
                str(bin_dir / "initdb"),
                "-D",
                str(cluster.data),
                "-U",
                "turnmemory",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=_TIMEOUT,
        )
        cluster.start()
        with psycopg.connect(cluster.url().replace("/turnmemory?", "/postgres?"), autocommit=True) as db:
            db.execute("CREATE DATABASE turnmemory")
    except (subprocess.SubprocessError, OSError, psycopg.Error) as error:
        output = getattr(error, "stderr", b"") or b""
        why = output.decode(errors="replace").strip().splitlines()[-1:] or [str(error)]
        cluster.remove()
        return f"PostgreSQL cannot start here: {why[0]}"
    return cluster
