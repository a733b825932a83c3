"""Fixtures of the API tests: one of every object in tenant A, and a live gunicorn server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa

from tests.support.clients import As, Tenant
from tests.support.world import World, build_world


@pytest.fixture
def world(engine: sa.Engine, acme: Tenant) -> World:
    """Tenant A's objects: ``acme.member`` owns the agent, sessions, run and a spare key."""
    return build_world(engine, acme)


@pytest.fixture
def caller(acme: Tenant, request: pytest.FixtureRequest) -> Callable[[str], As]:
    """The client of one case: a role of tenant A, or ``stranger`` (tenant B's owner)."""

    def pick(case: str) -> As:
        return request.getfixturevalue("globex").owner if case == "stranger" else getattr(acme, case)

    return pick
