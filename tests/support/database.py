"""A throwaway, migrated embedded PostgreSQL for tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
