"""A serving process's collector is settled once and runs between requests; no request changes it."""

from __future__ import annotations

import ast
import gc
import os
import runpy
import subprocess
import sys
import weakref
from collections.abc import Iterator

import pytest

from hango import serving_collector
from hango.config import REPO_ROOT
from tests.inspector.conftest import OFFLINE, Lab, assistant, user


@pytest.fixture
def collecting() -> Iterator[None]:
    """The collector enabled and nothing frozen at the start, and as it was at the end."""
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def cycles(count: int) -> list[weakref.ref]:
    """``count`` unreachable pairs of lists that refer to each other: only a pass frees them."""
    refs = []
    for _ in range(count):
        a, b = Cycle(), Cycle()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
    return refs


class Cycle:
    other: Cycle | None = None


def alive(refs: list[weakref.ref]) -> int:
    return sum(ref() is not None for ref in refs)


def test_a_serving_process_settles_its_collector_once_it_has_loaded(collecting: None) -> None:
    serving_collector.settle()

    assert not gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_the_pass_between_requests_frees_the_cycles_a_request_left(collecting: None) -> None:
    serving_collector.settle()
    left = cycles(gc.get_threshold()[0])  # 2 tracked objects a cycle: past the first threshold

    assert alive(left) == len(left)  # no automatic pass while the request ran
    assert serving_collector.between_requests()
    assert alive(left) == 0


def test_a_request_that_left_little_pays_no_pass(collecting: None) -> None:
    serving_collector.settle()
    gc.collect()
    left = cycles(1)

    assert not serving_collector.between_requests()
    assert alive(left) == 1
    gc.collect()


def test_wsgi_settles_the_collector_of_the_process_that_loads_the_app(database_url: str) -> None:
    probe = "import gc, wsgi; print(gc.isenabled(), gc.get_freeze_count() > 0)"
    env = {**os.environ, "HANGO_DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_gunicorns_post_request_hook_runs_the_pass_between_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[bool] = []
    monkeypatch.setattr(serving_collector, "between_requests", lambda: called.append(True))
    hooks = runpy.run_path(str(REPO_ROOT / "gunicorn.conf.py"))

    hooks["post_request"](None, None, {}, None)

    assert called == [True]


def test_no_module_but_the_serving_collector_changes_the_collector() -> None:
    changing = {"disable", "enable", "freeze", "unfreeze", "set_threshold"}
    found = []
    for path in [*(REPO_ROOT / "hango").rglob("*.py"), *(REPO_ROOT / "blueprints").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in changing
                and getattr(node.value, "id", "") == "gc"
            ):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")

    assert [f for f in found if not f.startswith("hango/serving_collector.py")] == []


def test_an_inspect_leaves_the_collector_as_it_was(lab: Lab, collecting: None) -> None:
    session = lab.session(lab.agent(model=OFFLINE), [user("hello"), assistant("hi")])

    assert [p["id"] for p in lab.inspect(session)["messages"]] == ["message:1", "message:2"]
    assert gc.isenabled()


def test_a_try_is_sent_with_the_collector_as_the_process_has_it(
    lab: Lab, collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = lab.session(lab.agent(), [user("hello")])
    during: list[bool] = []
    count = lab.fake.counter  # runs in the fake provider's thread of this process, as the call arrives
    monkeypatch.setattr(lab.fake, "counter", lambda body: (during.append(gc.isenabled()), count(body))[1])

    assert lab.try_(session).status_code == 200

    assert during == [True]  # no request turns the process's collector off
    assert gc.isenabled()
