"""The database extension: one engine per app, one connection per request."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa
from flask import Flask, current_app, g
from sqlalchemy.engine import Connection, Engine

from hango.config import Config


def make_engine(url: str) -> Engine:
    """An engine that survives a database restart (pre-ping) and bounds its pool."""
    return sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5, pool_recycle=1800)


class Database:
    """Hands each request one connection inside one transaction; closed on teardown."""

    def init_app(self, app: Flask, url: str) -> None:
        app.extensions["hango.engine"] = make_engine(url)
        app.teardown_appcontext(self._teardown)

    @property
    def engine(self) -> Engine:
        """The current app's engine."""
        return current_app.extensions["hango.engine"]

    def connection(self) -> Connection:
        """The request's connection, with a transaction begun."""
        if "db_conn" not in g:
            g.db_conn = self.engine.connect()
            g.db_conn.begin()
        return g.db_conn

    def commit(self) -> None:
        """Commit the request's transaction, if it opened one."""
        conn = g.get("db_conn")
        if conn is not None and conn.in_transaction():
            conn.commit()

    @staticmethod
    def _teardown(_exc: BaseException | None) -> None:
        conn = g.pop("db_conn", None)
        if conn is not None:
            if conn.in_transaction():
                conn.rollback()
            conn.close()


db = Database()


@contextlib.contextmanager
def attached_database(config: Config) -> Iterator[str]:
    """The configured database URL, or the embedded server's (started or shared) for the block."""
    if config.database_url:
        yield config.database_url
        return
    from hango.db.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(config.data_dir)
    url = server.acquire()
    try:
        yield url
    finally:
        server.release()
