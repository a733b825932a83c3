"""The embedded default: a private PostgreSQL that concurrent commands share."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest

from hango.config import Config
from hango.db import attached_database
from hango.db.embedded import EmbeddedDatabaseError, EmbeddedPostgres


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hango-embedded-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _reachable(url: str) -> bool:
    dsn = url.replace("postgresql+psycopg2://", "postgresql://")
    try:
        psycopg2.connect(dsn, connect_timeout=3).close()
    except psycopg2.OperationalError:
        return False
    return True


def _other_process_acquires(data_dir: Path) -> str:
    """Acquire and release the server from a second process; return the URL it saw."""
    script = textwrap.dedent(
        f"""
        from hango.db.embedded import EmbeddedPostgres
        server = EmbeddedPostgres({str(data_dir)!r}, durable=False)
        print(server.acquire())
        server.release()
        """
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_concurrent_commands_share_one_server_and_the_last_one_stops_it(data_dir):
    server = EmbeddedPostgres(data_dir, durable=False)
    url = server.acquire()
    try:
        assert _reachable(url)
        assert _other_process_acquires(data_dir) == url
        assert _reachable(url), "the other process's release must not stop a server still in use"
    finally:
        server.release()
    assert not _reachable(url)
    assert not (data_dir / "pgdata" / "postmaster.pid").exists()


def test_a_crashed_client_does_not_keep_the_server_alive(data_dir):
    server = EmbeddedPostgres(data_dir, durable=False)
    server.acquire()
    with server._locked() as state:
        state["clients"].append(2**22 + 7)
    server.release()
    assert not (data_dir / "pgdata" / "postmaster.pid").exists()


def test_a_configured_url_starts_nothing(data_dir):
    config = Config(database_url="postgresql+psycopg2://elsewhere/db", data_dir=data_dir)
    with attached_database(config) as url:
        assert url == "postgresql+psycopg2://elsewhere/db"
    assert list(data_dir.iterdir()) == []


def test_a_data_dir_the_service_user_cannot_reach_names_hango_data_dir():
    hidden = Path(tempfile.mkdtemp(prefix="hango-hidden-"))
    hidden.chmod(0o700)
    server = EmbeddedPostgres(hidden / "inner", durable=False)
    try:
        if os.geteuid() == 0:  # PostgreSQL runs as the service user, which cannot enter a 0700 root folder
            with pytest.raises(EmbeddedDatabaseError, match="HANGO_DATA_DIR"):
                server.acquire()
        else:  # PostgreSQL runs as the caller, who owns the folder
            assert _reachable(server.acquire())
            server.release()
    finally:
        shutil.rmtree(hidden, ignore_errors=True)
