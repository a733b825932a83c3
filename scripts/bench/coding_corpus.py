"""A deterministic corpus of coding-agent sessions, built by real runs of the offline model.

Each session works on a seeded virtual project (a dozen Python modules and a long
test log in the session's files). Every user turn asks the offline model for one
or two tool calls with its ``/tool NAME {json}`` lines, so the run loop executes
real tools and stores real tool_use/tool_result pairs: files are read, edited and
read again, the same greps run again, folders are listed, the long test log is
read, new files are written. A turn is four messages (user, assistant with the
calls, user with the results, assistant answer). The agent's window is large
enough that no run compacts. Everything follows from the seed.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from hango.agent.deps import Deps
from hango.agent.options import BUILTIN_TOOLS
from hango.agent.runner import run_inline
from hango.agent.state import Caller
from hango.store import TenantStore
from scripts.bench.estimator import python_code, shell_output, traceback_output

MODULES = 12
SETTINGS_PER_MODULE = 40
WORKING_SET = 4  # files a session keeps coming back to
LOG = "/logs/test-run.txt"
GREPS = ("def ", "TODO", "import json", "SETTING_", "raise ", "return None")
CORPUS_WINDOW = 10_000_000
TURNS = (  # what a user turn asks for, and how often
    ("read", 30),
    ("edit", 18),
    ("reread", 12),
    ("grep", 16),
    ("list", 8),
    ("log", 8),
    ("write", 4),
    ("read_and_grep", 4),
)


@dataclass
class Project:
    """The session's files as the generator knows them: each module's settings and their values."""

    rng: random.Random
    modules: list[str]
    values: dict[tuple[str, int], int] = field(default_factory=dict)
    recent: list[str] = field(default_factory=list)
    written: int = 0

    def module(self) -> str:
        """A module of the working set most of the time, any module otherwise."""
        pool = self.recent[-WORKING_SET:] if self.recent and self.rng.random() < 0.7 else self.modules
        path = self.rng.choice(pool)
        self.recent.append(path)
        return path

    def edit(self, path: str) -> dict[str, Any]:
        """An ``edit_file`` input that changes one setting line (each line is unique in its file)."""
        n = self.rng.randrange(SETTINGS_PER_MODULE)
        old = self.values.get((path, n), 0)
        self.values[(path, n)] = old + 1
        line = f"SETTING_{n} = {{}}  # tuned"
        return {"path": path, "old_string": line.format(old), "new_string": line.format(old + 1)}


def module_text(rng: random.Random, index: int) -> str:
    settings = "\n".join(f"SETTING_{n} = 0  # tuned" for n in range(SETTINGS_PER_MODULE))
    body = "\n\n\n".join(python_code(rng) for _ in range(2))
    return f'"""Module {index} of the project."""\n\n{settings}\n\n\n{body}\n'


def log_text(rng: random.Random) -> str:
    return "\n".join(rng.choice((shell_output, traceback_output))(rng) for _ in range(12))


def seed_project(store: TenantStore, session_id: uuid.UUID, rng: random.Random) -> Project:
    modules = [f"/src/app/module_{i:02d}.py" for i in range(MODULES)]
    for index, path in enumerate(modules):
        store.session_files.put(session_id, path, module_text(rng, index))
    store.session_files.put(session_id, LOG, log_text(rng))
    return Project(rng, modules)


def tool(name: str, arguments: dict[str, Any]) -> str:
    return f"/tool {name} {json.dumps(arguments)}"


def turn_text(project: Project) -> str:
    """One user turn: a sentence and the ``/tool`` lines the offline model turns into calls."""
    rng = project.rng
    kind = rng.choices([k for k, _ in TURNS], weights=[w for _, w in TURNS])[0]
    if kind in ("read", "reread", "read_and_grep"):
        path = project.recent[-1] if kind == "reread" and project.recent else project.module()
        lines = [tool("read_file", {"path": path})]
        if kind == "read_and_grep":
            lines.append(tool("grep", {"pattern": rng.choice(GREPS), "path": "/src"}))
        return f"Look at {path}.\n" + "\n".join(lines)
    if kind == "edit":
        path = project.module()
        return f"Tune a setting in {path}.\n" + tool("edit_file", project.edit(path))
    if kind == "grep":
        return "Where is this used?\n" + tool("grep", {"pattern": rng.choice(GREPS), "path": "/src"})
    if kind == "list":
        name, arguments = rng.choice(
            (("ls", {"path": "/src/app"}), ("glob", {"pattern": "**/*.py", "path": "/src"}))
        )
        return "What files are there?\n" + tool(name, arguments)
    if kind == "log":
        return "What did the test run say?\n" + tool("read_file", {"path": LOG})
    project.written += 1
    path = f"/src/app/new_{project.written}.py"
    return f"Add {path}.\n" + tool("write_file", {"path": path, "content": python_code(rng)})


@dataclass(frozen=True)
class CorpusSession:
    id: str
    turns: int
    messages: int


def add_agent(store: TenantStore, owner_id: uuid.UUID) -> Any:
    return store.agents.create(
        owner_id,
        name="coder",
        model="offline/echo",
        system_prompt="You are a careful coding agent. Read before you edit; keep changes small.",
        tools=list(BUILTIN_TOOLS),
        settings={},
        context_window=CORPUS_WINDOW,
    )


def build_session(
    deps: Deps, tenant_id: uuid.UUID, agent_id: uuid.UUID, caller: Caller, *, turns: int, seed: int
) -> CorpusSession:
    """A session of ``turns`` real runs of the offline model on a seeded project."""
    rng = random.Random(seed)
    with deps.engine.begin() as conn:
        store = TenantStore(conn, tenant_id)
        session = store.sessions.create(agent_id, caller.user_id, f"coding {turns}")
        project = seed_project(store, session.id, rng)
    for _ in range(turns):
        content = [{"type": "text", "text": turn_text(project)}]
        run_inline(deps, tenant_id, session, content, caller)
    with deps.engine.connect() as conn:
        stored = sum(1 for _ in TenantStore(conn, tenant_id).messages.history(session.id))
    return CorpusSession(str(session.id), turns, stored)
