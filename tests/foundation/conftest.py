"""Fixtures of the foundation tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa


@pytest.fixture
def fresh_url(engine: sa.Engine) -> Iterator[str]:
    """An empty database on the test server, dropped afterwards."""
    name = f"hango_fresh_{uuid.uuid4().hex[:8]}"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text(f"create database {name}"))
    yield engine.url.set(database=name).render_as_string(hide_password=False)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text(f"drop database {name} with (force)"))
