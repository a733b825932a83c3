"""Fixtures of the reliability suite: the fake Anthropic server judging every request, and live servers.

Every live server here is a real 2-worker gunicorn on loopback whose ``anthropic/...``
agents talk to the module's fake provider through the official SDK. The fake's
validator is a ``Ledger``: it answers a request the real API would reject with the
real API's 400 text, and remembers it, so a test can assert that hango sent 0 of them.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from hango.cli.admin import create_principal
from hango.providers import close_providers
from tests.conftest import TEST_RATE_LIMIT
from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.reliability.anthropic_rules import Ledger
from tests.reliability.http import Http
from tests.support.nginx import nginx_proxy
from tests.support.server import QueueWorkers, gunicorn_server, queue_worker_pool

TRY_TIMEOUT = 10.0
MODEL = "anthropic/claude-fake-1"


@dataclasses.dataclass(frozen=True)
class LiveTenant:
    """One tenant of a live server: an owner and two members, each with their own key."""

    id: str
    owner: Http
    member: Http
    member2: Http


@dataclasses.dataclass(frozen=True)
class Live:
    """A running gunicorn, the fake provider it calls, and where its output goes."""

    url: str
    provider: FakeProviderServer
    ledger: Ledger
    log: Path
    workers: QueueWorkers

    def log_text(self) -> str:
        """gunicorn's output and its queue workers'."""
        return self.log.read_bytes().decode("utf-8", "replace") + self.workers.log_text()


def provider_env(provider: FakeProviderServer, try_timeout: float = TRY_TIMEOUT) -> dict[str, str]:
    """The ``HANGO_*`` settings that point a server at ``provider``."""
    return {
        "HANGO_ANTHROPIC_BASE_URL": provider.anthropic_base_url,
        "ANTHROPIC_API_KEY": TEST_API_KEY,
        "HANGO_CONTEXT_TRY_TIMEOUT": str(try_timeout),
        # the server's web and its workers share this env, so they share a queue no other server takes from
        "HANGO_JOB_QUEUE": f"test-{uuid.uuid4().hex[:12]}",
    }


@pytest.fixture(scope="session")
def live(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The suite's gunicorn (2 workers) on the test database, its provider the judging fake."""
    ledger = Ledger()
    log = tmp_path_factory.mktemp("live") / "gunicorn.log"
    with FakeProviderServer(validator=ledger) as provider:
        env = provider_env(provider)
        with (
            queue_worker_pool(database_url, env, log) as workers,
            gunicorn_server(database_url, env=env, log_path=log, queue_workers=0) as url,
        ):
            yield Live(url, provider, ledger, log, workers)
        close_providers()


AUTH_FAILURE_LIMIT = 20


@dataclasses.dataclass(frozen=True)
class Proxied:
    """The production deployment: nginx (``deploy/nginx.conf``) in front of a 2-worker gunicorn."""

    gunicorn: str
    nginx: str


@pytest.fixture(scope="session")
def proxied(database_url: str) -> Iterator[Proxied]:
    """gunicorn trusting the proxy's loopback address for ``X-Forwarded-For``, and nginx in front of it."""
    env = {"HANGO_TRUSTED_PROXIES": "127.0.0.1", "HANGO_AUTH_FAILURE_LIMIT": str(AUTH_FAILURE_LIMIT)}
    with gunicorn_server(database_url, env=env) as url, nginx_proxy(url) as proxy:
        yield Proxied(url, proxy)


@pytest.fixture
def fresh(live: Live) -> Iterator[Live]:
    """The live server with the fake's script and received requests cleared for this test."""
    live.provider.reset()
    yield live
    live.provider.reset()


def principal(engine: sa.Engine, url: str, who: tuple[str, str, str], limit: int) -> Http:
    """A new key for ``(tenant, email, role)`` (made when missing), as an HTTP client of ``url``."""
    with engine.begin() as conn:
        made = create_principal(conn, *who, limit)
    return Http(url, made["api_key"], made["tenant_id"], made["user_id"], made["api_key_id"])


MakeTenant = Callable[..., LiveTenant]


@pytest.fixture
def live_tenant(engine: sa.Engine, clean_db: None) -> Iterator[MakeTenant]:
    """Make tenants on a live server's database; their clients are closed after the test."""
    made: list[LiveTenant] = []

    def make(url: str, name: str = "Acme", limit: int = TEST_RATE_LIMIT) -> LiveTenant:
        slug = name.lower()
        tenant = LiveTenant(
            id="",
            owner=principal(engine, url, (name, f"owner@{slug}.test", "owner"), limit),
            member=principal(engine, url, (name, f"member@{slug}.test", "member"), limit),
            member2=principal(engine, url, (name, f"member2@{slug}.test", "member"), limit),
        )
        tenant = dataclasses.replace(tenant, id=tenant.owner.tenant_id)
        made.append(tenant)
        return tenant

    yield make
    for tenant in made:
        for client in (tenant.owner, tenant.member, tenant.member2):
            client.close()
