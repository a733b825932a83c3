"""Fixtures for the provider tests: a fake provider server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.provider_server import FakeProviderServer


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake
