"""What server-side commands share: configuration and the attached database."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from sqlalchemy.engine import Engine

from hango.config import Config, ConfigError, load_config
from hango.db import attached_database, make_engine, migrate
from hango.mcp.catalog import catalog_servers


def config_or_exit() -> Config:
    """The configuration from the environment; a bad value (the MCP catalog's included) exits with a message."""
    try:
        config = load_config()
        catalog_servers(config)  # a malformed catalog fails at start, not at a tenant's first attach
        return config
    except ConfigError as exc:
        print(f"hango: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


def fail(message: str, code: int = 1) -> int:
    """Print ``message`` to stderr and return ``code``."""
    print(f"hango: {message}", file=sys.stderr)
    return code


@contextlib.contextmanager
def migrated_engine(config: Config) -> Iterator[Engine]:
    """An engine on the configured (or embedded) database, which must be at the newest migration."""
    with attached_database(config) as url:
        engine = make_engine(url)
        try:
            migrate.check_current(engine)
            yield engine
        finally:
            engine.dispose()
