"""Fixtures of the trace tests: one real Arize Phoenix per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.phoenix import phoenix_server


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a Phoenix started once for the session, with its data in a temp folder."""
    working_dir = tmp_path_factory.mktemp("phoenix")
    working_dir.chmod(0o755)
    with phoenix_server(working_dir) as url:
        yield url
