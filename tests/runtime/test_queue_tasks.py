"""The queue's tasks, each referenced by its object: one definition spells a task's stored name.

``hango.worker.queue_tasks`` defines the run task, the reaper and the fold once each. The web
defers a run through the run task (its name read off it), and every worker's app binds each
task as defined (name, body, context, retry) on the configured queue. The name scan reads the
source with ``ast`` (nothing is imported), as the layer tests read the import graph.
"""

from __future__ import annotations

import ast
import uuid
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from hango.agent.deps import Deps
from hango.config import REPO_ROOT
from hango.jobs import defer_run, session_lock, web_queue
from hango.store.runs import SCRATCH_TURN_KIND
from hango.worker import DEPS, GIVE_BACK, fold_task, queue_tasks, reap_task, run_task, worker_queue

SOURCES = ("hango", "blueprints", "scripts")


def spellings(source: str, names: set[str]) -> list[tuple[int, str]]:
    """``(line, name)`` of each string constant in ``source`` that is exactly one of ``names``."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def definitions(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each ``@queue_tasks.task(name=...)`` in ``source``."""
    return [
        (keyword.value.lineno, keyword.value.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "queue_tasks.task"
        for keyword in node.keywords
        if keyword.arg == "name" and isinstance(keyword.value, ast.Constant)
    ]


def test_the_queue_tasks_are_the_run_the_reaper_and_the_fold_with_their_stored_names() -> None:
    assert dict(queue_tasks.tasks) == {
        "hango.run": run_task,
        "hango.reap": reap_task,
        "hango.fold_part_costs": fold_task,
    }


def test_the_queue_task_is_referenced_by_its_object_only_its_definition_spells_its_name() -> None:
    names = set(queue_tasks.tasks)
    found = {
        (str(path.relative_to(REPO_ROOT)), line, name)
        for folder in SOURCES
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
        for line, name in spellings(path.read_text(encoding="utf-8"), names)
    }

    worker = (REPO_ROOT / "hango" / "worker.py").read_text(encoding="utf-8")
    assert found == {("hango/worker.py", line, name) for line, name in definitions(worker)}
    assert sorted(name for _, _, name in found) == sorted(names)  # each name spelled once


def test_the_name_scan_sees_a_task_named_by_a_string_outside_its_definition() -> None:
    source = 'deferrer = queue.configure_task("hango.run", lock=lock)\nlabel = "hango.run_id"\n'

    assert spellings(source, set(queue_tasks.tasks)) == [(1, "hango.run")]


def queued(engine: sa.Engine, job_id: int) -> tuple[str, str, str | None]:
    query = sa.text("select task_name, queue_name, lock from procrastinate_jobs where id = :id")
    with engine.connect() as conn:
        return tuple(conn.execute(query, {"id": job_id}).one())


def test_the_web_defers_a_run_through_the_run_task_object(
    engine: sa.Engine, clean_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = web_queue(engine)
    run = SimpleNamespace(
        id=uuid.uuid4(), tenant_id=uuid.uuid4(), user_id=uuid.uuid4(), session_id=uuid.uuid4(), kind="message"
    )
    tried = SimpleNamespace(**{**vars(run), "id": uuid.uuid4(), "kind": SCRATCH_TURN_KIND})

    with engine.begin() as conn:
        message_job = defer_run(web, conn, run, None, "runs-a")
        try_job = defer_run(web, conn, tried, None, "runs-a")
        monkeypatch.setattr(run_task, "name", "hango.run.elsewhere")  # the job follows the task
        moved_job = defer_run(web, conn, run, None, "runs-a")

    assert web.tasks.keys().isdisjoint({"hango.run", "hango.run.elsewhere"})  # the web's app runs no task
    assert queued(engine, message_job) == ("hango.run", "runs-a", session_lock(run.session_id))
    assert queued(engine, try_job) == ("hango.run", "runs-a", None)
    assert queued(engine, moved_job) == ("hango.run.elsewhere", "runs-a", session_lock(run.session_id))


def test_each_workers_app_binds_the_queue_tasks_as_defined_on_its_queue(engine: sa.Engine, make_app) -> None:
    deps = Deps(engine, make_app().config["HANGO"])

    app = worker_queue(deps)

    bound = {name: app.tasks[name] for name in queue_tasks.tasks}
    assert {name: (t.func, t.queue, t.pass_context) for name, t in bound.items()} == {
        task.name: (task.func, deps.config.job_queue, True) for task in (run_task, reap_task, fold_task)
    }
    assert [bound[t.name].retry_strategy for t in (run_task, reap_task, fold_task)] == [GIVE_BACK, None, None]
    assert app.worker_defaults["additional_context"] == {DEPS: deps}  # the bodies' Deps, set when it is made
    alone = worker_queue(deps, periodic=False)
    assert (run_task.name in alone.tasks, reap_task.name in alone.tasks, fold_task.name in alone.tasks) == (
        True,
        False,
        False,
    )
