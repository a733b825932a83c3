"""Alembic, driven from code: ``hango db upgrade|downgrade`` and the start-up schema check."""

from __future__ import annotations

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from hango.config import REPO_ROOT

MIGRATIONS_DIR = REPO_ROOT / "migrations"


class SchemaNotCurrent(RuntimeError):
    """The database is not at the newest migration."""


def _alembic(connection: Connection) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database up to ``revision``."""
    with engine.begin() as conn:
        command.upgrade(_alembic(conn), revision)


def downgrade(engine: Engine, revision: str = "-1") -> None:
    """Migrate the database down to ``revision`` (``-1``: one step, ``base``: empty)."""
    with engine.begin() as conn:
        command.downgrade(_alembic(conn), revision)


def head_revision() -> str:
    """The newest revision in ``migrations/versions``."""
    return ScriptDirectory.from_config(_alembic(None)).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    return MigrationContext.configure(connection).get_current_revision()


def check_current(engine: Engine) -> None:
    """Raise ``SchemaNotCurrent`` with a one-line hint unless the database is at head."""
    with engine.connect() as conn:
        current = current_revision(conn)
    head = head_revision()
    if current != head:
        raise SchemaNotCurrent(
            f"the database is at migration {current or 'none'}, not {head}: run `hango db upgrade`"
        )
