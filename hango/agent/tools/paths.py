"""Paths of the virtual filesystem: normalisation, the read-only and memory mounts, glob patterns."""

from __future__ import annotations

import re

import re2

from hango.agent.tools.base import ToolFailure
from hango.agent.tools.search import compile_pattern
from hango.paths import MAX_PATH_CHARS, PathRefused, path_text

MEMORIES = "/memories"
SKILLS = "/skills"
SKILL_FILE = "SKILL.md"
_GLOB_TOKENS = re.compile(r"((?:\*\*/)+|\*\*|\*|\?)")
_GLOB_REGEX = {"**/": "(?:[^/]+/)*", "**": ".*", "*": "[^/]*", "?": "[^/]"}


def normal_path(raw: str) -> str:
    """``raw`` as an absolute NFC path without empty segments or a trailing slash; ``ToolFailure`` if it cannot be one."""
    if not raw.startswith("/"):
        raise ToolFailure(f"paths are absolute (they start with /): {raw[:MAX_PATH_CHARS]!r}")
    try:
        raw = path_text(raw)
    except PathRefused as exc:
        raise ToolFailure(str(exc)) from exc
    segments = [segment for segment in raw.split("/") if segment]
    if any(segment in (".", "..") for segment in segments):
        raise ToolFailure(f"a path has no '.' or '..' segments: {raw!r}")
    return "/" + "/".join(segments)


def is_under(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or inside it (both normal)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def mount_of(path: str) -> str | None:
    """``/memories`` or ``/skills`` when ``path`` is in one of those folders, else None (a session file)."""
    return next((mount for mount in (MEMORIES, SKILLS) if is_under(path, mount)), None)


def skill_file(name: str) -> str:
    return f"{SKILLS}/{name}/{SKILL_FILE}"


def glob_regex(pattern: str, folder: str) -> re2._Regexp:
    """An RE2 regex for the paths ``pattern`` matches: ``*`` and ``?`` within one segment, ``**`` across them.

    A relative pattern is taken from ``folder``; an absolute one stands alone. ``**/**/``
    matches what ``**/`` matches, so a run of them is one ``**/``.
    """
    if not pattern.startswith("/"):
        pattern = folder.rstrip("/") + "/" + pattern
    parts = _GLOB_TOKENS.split(pattern)
    regex = "".join(_glob_part(part) for part in parts)
    return compile_pattern(regex, "glob pattern")


def _glob_part(part: str) -> str:
    if part.startswith("**/"):
        return _GLOB_REGEX["**/"]
    return _GLOB_REGEX.get(part) or re2.escape(part)


def children(folder: str, paths: list[str]) -> list[str]:
    """The direct children of ``folder`` among ``paths``: files, and folders (with a trailing ``/``)."""
    prefix = folder.rstrip("/") + "/"
    entries = set()
    for path in paths:
        if not path.startswith(prefix):
            continue
        head, sep, _ = path.removeprefix(prefix).partition("/")
        entries.add(prefix + head + sep)
    return sorted(entries)
