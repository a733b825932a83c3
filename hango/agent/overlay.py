"""The overlay of a scratch turn: the session read through a snapshot, the turn's writes kept in memory.

A scratch turn (a run of kind ``try``) reads the session's files, memory files and todos
through a store on a ``REPEATABLE READ READ ONLY`` transaction (its snapshot) and writes
them into copy-on-write maps here (path → content, or None for deleted; session →
todos), which its own later reads see first. Nothing here speaks SQL: an overlay wraps
the snapshot's sub-store and keeps the rest in memory, so a write can never reach the
database (the snapshot's transaction would refuse it anyway). History and the summary
stay in the turn's run state, in memory, as the subagent's turns do.

``changes`` compares the overlay with the snapshot: what the turn would have written,
as unified diffs (``file_change``; a test applies the same function to a real run's
before and after).
"""

from __future__ import annotations

import difflib
import heapq
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy.engine import Connection

from hango.store import TenantStore

NO_NEWLINE = "\\ No newline at end of file\n"


class File(NamedTuple):
    """A file as the tools read it (``row.path``, ``row.content``), from the overlay."""

    path: str
    content: str


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class FileOverlay:
    """A path-keyed table (session files or memory files): the snapshot's rows under the turn's writes."""

    def __init__(self, base: Any) -> None:
        self.base = base  # the snapshot's SessionFiles or MemoryFiles
        self.written: dict[tuple[uuid.UUID, str], str | None] = {}  # None: deleted

    def get(self, owner_id: uuid.UUID, path: str) -> Any:
        """The file at ``path`` as the turn sees it, or None."""
        if (owner_id, path) in self.written:
            content = self.written[(owner_id, path)]
            return None if content is None else File(path, content)
        return self.base.get(owner_id, path)

    def put(self, owner_id: uuid.UUID, path: str, content: str) -> File:
        """Create or replace the file in the overlay only."""
        self.written[(owner_id, path)] = content
        return File(path, content)

    def delete(self, owner_id: uuid.UUID, path: str) -> bool:
        """Delete the file in the overlay only; False when there was none."""
        existed = self.get(owner_id, path) is not None
        self.written[(owner_id, path)] = None
        return existed

    def under(self, owner_id: uuid.UUID, folder: str, *, content: bool = True) -> list[File]:
        """The files at or inside ``folder`` as the turn sees them, by path."""
        found = {row.path: row.content for row in self.base.under(owner_id, folder, content=content)}
        for path, text in self._written_under(owner_id, folder):
            if text is None:
                found.pop(path, None)
            else:
                found[path] = text if content else ""
        return [File(path, found[path]) for path in sorted(found)]

    @contextmanager
    def stream_under(self, owner_id: uuid.UUID, folder: str) -> Iterator[Iterator[tuple[str, str]]]:
        """The files at or inside ``folder`` with their content, in code-point order of path, streamed.

        The snapshot's rows stream from its cursor; the turn's own writes are merged in (and the
        rows they replace or delete left out).
        """
        mine = dict(self._written_under(owner_id, folder))
        with self.base.stream_under(owner_id, folder) as rows:
            kept = ((path, text) for path, text in rows if path not in mine)
            yield heapq.merge(kept, sorted((p, t) for p, t in mine.items() if t is not None))

    def for_prompt(self, owner_id: uuid.UUID, max_files: int, max_chars: int) -> dict[str, str]:
        """Memory files for the prompt (``MemoryFiles.for_prompt``) as the turn sees them."""
        if not any(owner == owner_id for owner, _ in self.written):
            return self.base.for_prompt(owner_id, max_files, max_chars)
        files = self.under(owner_id, "/")[:max_files]
        return {row.path: row.content[: max_chars + 1] for row in files}

    def _written_under(self, owner_id: uuid.UUID, folder: str) -> list[tuple[str, str | None]]:
        return [
            (path, text)
            for (owner, path), text in self.written.items()
            if owner == owner_id and _inside(path, folder)
        ]

    def changes(self) -> list[dict[str, Any]]:
        """What the turn's writes would change against the snapshot, by path (writes that change nothing left out)."""
        found = []
        for (owner, path), after in sorted(self.written.items(), key=lambda item: item[0][1]):
            row = self.base.get(owner, path)
            change = file_change(path, row.content if row else None, after)
            if change is not None:
                found.append(change)
        return found


class TodoOverlay:
    """The sessions' todo lists: the snapshot's under the turn's ``write_todos``."""

    def __init__(self, base: Any) -> None:
        self.base = base  # the snapshot's Todos
        self.written: dict[uuid.UUID, list[dict[str, Any]]] = {}

    def get(self, session_id: uuid.UUID) -> list[dict[str, Any]] | None:
        if session_id in self.written:
            return self.written[session_id]
        return self.base.get(session_id)

    def set(self, session_id: uuid.UUID, todos: list[dict[str, Any]]) -> bool:
        """Replace the list in the overlay only; False when the snapshot has no such session."""
        if self.get(session_id) is None:
            return False
        self.written[session_id] = list(todos)
        return True

    def changes(self, session_id: uuid.UUID) -> dict[str, Any] | None:
        """``{before, after}`` when the turn changed the session's list, else None."""
        before = self.base.get(session_id) or []
        after = self.written.get(session_id, before)
        return None if after == before else {"before": before, "after": after}


class OverlayStore(TenantStore):
    """A tenant store on the snapshot's connection whose session files, memory files and todos are overlays.

    Everything else reads the snapshot; a write to it fails (the transaction is read only).
    """

    def __init__(self, conn: Connection, tenant_id: uuid.UUID) -> None:
        super().__init__(conn, tenant_id)
        self.session_files = FileOverlay(self.session_files)
        self.memory_files = FileOverlay(self.memory_files)
        self.todos = TodoOverlay(self.todos)

    def changes(self, session_id: uuid.UUID) -> dict[str, Any]:
        """What the turn would have changed: files, memory files (unified diffs) and the todo list."""
        return {
            "files": self.session_files.changes(),
            "memory": self.memory_files.changes(),
            "todos": self.todos.changes(session_id),
        }


def file_change(path: str, before: str | None, after: str | None) -> dict[str, Any] | None:
    """``{path, change, diff}`` for a file that was ``before`` and is ``after`` (None: absent); None if equal."""
    if before == after:
        return None
    change = "created" if before is None else "deleted" if after is None else "edited"
    return {"path": path, "change": change, "diff": unified_diff(path, before or "", after or "")}


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff from ``a<path>`` to ``b<path>``, marking a last line without a newline as ``diff -u`` does."""
    return "".join(difflib.unified_diff(_lines(before), _lines(after), f"a{path}", f"b{path}"))


def _lines(text: str) -> list[str]:
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] += NO_NEWLINE
    return lines
