"""The embedded default: a private PostgreSQL under ``HANGO_DATA_DIR`` (``./.hango/``).

Only CLI entry points start or attach to it. Concurrent commands share one
server: each registers its pid in ``server.json`` under an exclusive file lock,
and the last one out stops the server. Run as root, PostgreSQL runs as an
unprivileged service user (initdb refuses root).

Binaries come from the ``pgserver`` package when installed, else from the
machine's PostgreSQL (``/usr/lib/postgresql/<v>/bin`` or ``initdb`` on PATH).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

SERVICE_USER = "hango-pg"
DATABASE = "hango"


class EmbeddedDatabaseError(RuntimeError):
    """The embedded PostgreSQL could not be started or reached."""


def _candidate_bin_dirs() -> list[Path]:
    dirs = []
    spec = importlib.util.find_spec("pgserver")  # located, not imported: importing it warns
    if spec is not None and spec.submodule_search_locations:
        dirs.append(Path(spec.submodule_search_locations[0]) / "pginstall" / "bin")
    dirs += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        dirs.append(Path(on_path).resolve().parent)
    return [d for d in dirs if (d / "initdb").exists() and (d / "pg_ctl").exists()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedPostgres:
    """A private PostgreSQL cluster in ``data_dir``, shared by the processes that acquire it."""

    def __init__(self, data_dir: Path, *, durable: bool = True) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.pgdata = self.data_dir / "pgdata"
        self.durable = durable
        self._user = SERVICE_USER if os.geteuid() == 0 else None

    def acquire(self) -> str:
        """Start the server if no one runs it, register this process, return the database URL."""
        with self._locked() as state:
            if not (state.get("port") and self._running()):
                state.clear()
                state["port"] = self._start()
                state["clients"] = []
            state["clients"] = [*self._live_clients(state), os.getpid()]
            return self.url(state["port"])

    def release(self) -> None:
        """Unregister this process; stop the server when no registered process is left."""
        with self._locked() as state:
            state["clients"] = [p for p in self._live_clients(state) if p != os.getpid()]
            if not state["clients"]:
                self._pg_ctl("stop", "-m", "fast", "-w", check=False)
                state.clear()

    @staticmethod
    def url(port: int) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{DATABASE}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict]:
        self._prepare_dir()
        state_file = self.data_dir / "server.json"
        with open(self.data_dir / "server.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(state_file.read_text()) if state_file.exists() else {}
            yield state
            state_file.write_text(json.dumps(state))

    @staticmethod
    def _live_clients(state: dict) -> list[int]:
        return [p for p in state.get("clients", []) if _pid_alive(p)]

    def _prepare_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._user is None:
            return
        self._ensure_service_user()
        if not self.pgdata.exists():
            self.pgdata.mkdir(mode=0o700)
            record = pwd.getpwnam(self._user)
            os.chown(self.pgdata, record.pw_uid, record.pw_gid)
        if self._as_user(["test", "-w", str(self.pgdata)]).returncode != 0:
            raise EmbeddedDatabaseError(
                f"PostgreSQL runs as the user {self._user!r}, which cannot reach {self.pgdata}; "
                "set HANGO_DATA_DIR to a folder it can reach (outside /root), e.g. /var/tmp/hango"
            )

    def _ensure_service_user(self) -> None:
        try:
            pwd.getpwnam(self._user)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", self._user],
                check=True,
                capture_output=True,
            )

    def _as_user(self, argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(argv, user=self._user, capture_output=True, text=True, check=False)

    def _bin(self) -> Path:
        for candidate in _candidate_bin_dirs():
            if self._as_user([str(candidate / "initdb"), "--version"]).returncode == 0:
                return candidate
        raise EmbeddedDatabaseError(
            "no usable PostgreSQL found: install the requirements (pgserver) or PostgreSQL, "
            "or set HANGO_DATABASE_URL"
        )

    def _pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = self._as_user([str(self._bin() / "pg_ctl"), "-D", str(self.pgdata), *args])
        if check and result.returncode != 0:
            log = self.data_dir / "postgres.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise EmbeddedDatabaseError(f"pg_ctl {args[0]} failed: {result.stderr.strip()}\n{tail}")
        return result

    def _running(self) -> bool:
        return (
            self.pgdata.joinpath("PG_VERSION").exists()
            and self._pg_ctl("status", check=False).returncode == 0
        )

    def _start(self) -> int:
        if not self.pgdata.joinpath("PG_VERSION").exists():
            self._initdb()
        port = _free_port()
        options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        log = self.data_dir / "postgres.log"
        if self._user is not None:
            log.touch()
            shutil.chown(log, self._user)
        self._pg_ctl("start", "-w", "-t", "60", "-l", str(log), "-o", options)
        self._create_database(port)
        return port

    def _initdb(self) -> None:
        result = self._as_user(
            [
                str(self._bin() / "initdb"),
                "-D",
                str(self.pgdata),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ]
        )
        if result.returncode != 0:
            raise EmbeddedDatabaseError(f"initdb failed: {result.stderr.strip()}")

    @staticmethod
    def _create_database(port: int) -> None:
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("select 1 from pg_database where datname = %s", (DATABASE,))
            if cur.fetchone() is None:
                cur.execute(f"create database {DATABASE}")
        conn.close()
