"""The virtual filesystem the tools see: session files, plus two mounts.

- ``/memories/...`` are the agent's memory files (``memory_files``): they outlive the
  session, and a write also updates ``state.memory`` so later turns of the run see it;
- ``/skills/<name>/SKILL.md`` is a skill's body, read from ``state.skills`` (read-only);
- every other path is a file of the session (``session_files``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from hango.agent.tools.base import ToolContext, ToolFailure
from hango.agent.tools.paths import MEMORIES, SKILLS, is_under, mount_of, skill_file
from hango.errors import Unprocessable
from hango.store.memory_files import memory_path

# About 1 MB: the most one session file may hold, so a single tool call stays a bounded write.
MAX_FILE_CHARS = 1_048_576
# The memory API's bound (``PUT /v1/agents/{id}/memory/<path>``), so both writers agree.
MAX_MEMORY_FILE_CHARS = 100_000
FOLDERS = ("/", MEMORIES, SKILLS)


def read(ctx: ToolContext, path: str) -> str:
    """The content of the file at ``path``; ``ToolFailure`` when there is none."""
    _not_a_mount(path)
    mount = mount_of(path)
    if mount == SKILLS:
        content = _skill_files(ctx).get(path)
    elif mount == MEMORIES:
        row = ctx.store.memory_files.get(ctx.state.agent.id, _memory_path(path))
        content = row.content if row else None
    else:
        row = ctx.store.session_files.get(ctx.state.session_id, path)
        content = row.content if row else None
    if content is None:
        raise ToolFailure(f"no file at {path} (ls or glob list the files)")
    return content


def write(ctx: ToolContext, path: str, content: str) -> None:
    """Create or replace the file at ``path``; a memory file also replaces its entry in ``state.memory``."""
    _not_a_mount(path)
    mount = mount_of(path)
    if mount == SKILLS:
        raise ToolFailure(f"{SKILLS} is read-only: skills are changed through the skills API")
    limit = MAX_MEMORY_FILE_CHARS if mount == MEMORIES else MAX_FILE_CHARS
    if len(content) > limit:
        raise ToolFailure(f"{path} would hold {len(content)} characters; a file holds at most {limit}")
    if mount == MEMORIES:
        path = _memory_path(path)
        ctx.store.memory_files.put(ctx.state.agent.id, path, content)
        ctx.state.memory[path] = content
    else:
        ctx.store.session_files.put(ctx.state.session_id, path, content)


def files(ctx: ToolContext, folder: str, *, content: bool = True) -> dict[str, str]:
    """Every file at or inside ``folder``, path to content (empty strings without ``content``).

    At most one query per table the folder reaches: session files and memory files.
    """
    found: dict[str, str] = {}
    if mount_of(folder) is None:
        rows = ctx.store.session_files.under(ctx.state.session_id, folder, content=content)
        found.update((row.path, row.content) for row in rows)
    if is_under(MEMORIES, folder) or is_under(folder, MEMORIES):
        rows = ctx.store.memory_files.under(ctx.state.agent.id, folder, content=content)
        found.update((row.path, row.content) for row in rows)
    if is_under(SKILLS, folder) or is_under(folder, SKILLS):
        skills = _skill_files(ctx)
        found.update(
            (path, body if content else "") for path, body in skills.items() if is_under(path, folder)
        )
    return dict(sorted(found.items()))


@contextmanager
def contents(ctx: ToolContext, folder: str) -> Iterator[Iterator[tuple[str, str]]]:
    """Every file at or inside ``folder`` with its content, streamed in path order.

    Session and memory files come from one server-side cursor per table the folder
    reaches, a few rows at a time (``STREAM_BATCH``), so a reader that stops early reads
    no more, and the whole folder is never in memory at once.
    """
    with ExitStack() as cursors:
        streams: list[Iterator[tuple[str, str]]] = []
        if mount_of(folder) is None:
            streams.append(
                cursors.enter_context(ctx.store.session_files.stream_under(ctx.state.session_id, folder))
            )
        if is_under(MEMORIES, folder) or is_under(folder, MEMORIES):
            streams.append(
                cursors.enter_context(ctx.store.memory_files.stream_under(ctx.state.agent.id, folder))
            )
        if is_under(SKILLS, folder) or is_under(folder, SKILLS):
            streams.append(iter(sorted((p, b) for p, b in _skill_files(ctx).items() if is_under(p, folder))))
        yield heapq.merge(*streams)


def _skill_files(ctx: ToolContext) -> dict[str, str]:
    return {skill_file(skill.name): skill.body for skill in ctx.state.skills}


def _not_a_mount(path: str) -> None:
    if path in FOLDERS:
        raise ToolFailure(f"{path} is a folder, not a file (ls lists it)")


def _memory_path(path: str) -> str:
    try:
        return memory_path(path)
    except Unprocessable as exc:
        raise ToolFailure(exc.message) from exc
