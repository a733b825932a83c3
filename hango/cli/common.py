"""What server-side commands share: configuration and the attached database."""

from __future__ import annotations

import sys

from hango.config import Config, ConfigError, load_config


def config_or_exit() -> Config:
    """The configuration from the environment; a bad value exits with a message."""
    try:
        return load_config()
    except ConfigError as exc:
        print(f"hango: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


def fail(message: str, code: int = 1) -> int:
    """Print ``message`` to stderr and return ``code``."""
    print(f"hango: {message}", file=sys.stderr)
    return code
