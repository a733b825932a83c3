"""A throwaway, migrated embedded PostgreSQL for tests; a database of its own for each pytest-xdist worker."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from hango.db import make_engine, migrate
from hango.db.embedded import EmbeddedPostgres


@contextmanager
def migrated_postgres(prefix: str = "hango-test-") -> Iterator[tuple[EmbeddedPostgres, str]]:
    """Start a private PostgreSQL in a temp folder, migrate it, yield it and its URL; remove it after."""
    # /tmp, not pytest's 0700 tmp_path: PostgreSQL's service user must reach the data folder.
    data_dir = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    data_dir.chmod(0o755)
    server = EmbeddedPostgres(data_dir, durable=False)
    url = server.acquire()
    try:
        engine = make_engine(url)
        migrate.upgrade(engine)
        engine.dispose()
        yield server, url
    finally:
        server.release()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def worker_database(url: str, worker: str) -> Iterator[str]:
    """A migrated database named after ``url``'s plus ``_<worker>`` on the same server, dropped after.

    Under pytest-xdist every worker truncates its tables after each test: two workers on
    one database would empty each other's rows mid-test.
    """
    base = sa.engine.make_url(url)
    name = f"{base.database}_{worker}"
    server = make_engine(url)

    def run(statement: str) -> None:
        with server.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text(statement))

    run(f'drop database if exists "{name}" with (force)')  # left by a run that was killed
    run(f'create database "{name}"')
    own = base.set(database=name).render_as_string(hide_password=False)
    try:
        engine = make_engine(own)
        migrate.upgrade(engine)
        engine.dispose()
        yield own
    finally:
        run(f'drop database if exists "{name}" with (force)')
        server.dispose()
