"""Request-scoped things are built once: Deps and Caller per request, the try pool per app."""

from __future__ import annotations

import importlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from hango import tenancy
from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.try_pool import EXTENSION
from tests.inspector.conftest import Lab, assistant, user


class Counter:
    """A stand-in for a class that counts how often it is built and builds the real one."""

    def __init__(self, real: type) -> None:
        self.real, self.built = real, 0

    def __call__(self, *args, **kwargs):
        self.built += 1
        return self.real(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, Counter]:
    deps, caller = Counter(Deps), Counter(Caller)
    monkeypatch.setattr(tenancy, "Deps", deps)
    monkeypatch.setattr(tenancy, "Caller", caller)
    return deps, caller


@pytest.mark.parametrize("query", [{}, {"format": "request"}])
def test_deps_and_caller_are_built_once_per_inspect_request(lab: Lab, counted, query) -> None:
    session = lab.session(lab.agent(), [user("hi"), assistant("hello")])
    deps, caller = counted

    lab.inspect(session, **query)

    assert (deps.built, caller.built) == (1, 1)


def test_deps_and_caller_are_built_once_per_try_request(lab: Lab, counted) -> None:
    session = lab.session(lab.agent(), [user("hi"), assistant("hello")])
    deps, caller = counted

    assert lab.try_(session).status_code == 200

    assert (deps.built, caller.built) == (1, 1)


def test_the_try_pool_is_created_in_create_app_not_at_import(make_app) -> None:
    for name in ("blueprints.context_try", "hango.try_pool"):
        module = importlib.import_module(name)
        assert not [value for value in vars(module).values() if isinstance(value, ThreadPoolExecutor)]

    first, second = make_app(), make_app()

    assert EXTENSION in first.extensions
    assert first.extensions[EXTENSION].executor is not second.extensions[EXTENSION].executor
