"""Tables in ``docs/performance.md`` that a benchmark writes itself, naming the commit they measured.

A table lives between two marker comments::

    <!-- bench:inspect commit=<sha> dirty=no date=<UTC time> load=<1, 5, 15 min> -->
    ...the table, as the benchmark printed it...
    <!-- /bench:inspect -->

``write_table`` replaces what lies between them (the markers stay, with the new
commit, date and load); ``tables`` reads them back. The commit is the one
checked out when the benchmark ran, and ``dirty=yes`` says that the inspect
path had uncommitted changes then. ``tests/perf/test_doc_tables.py`` fails when
a commit after a table's changed the inspect path (``INSPECT_PATH``): the last
step of a change to that path is running its benchmark with ``--write-doc`` and
committing the document.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hango.config import REPO_ROOT

DOC = REPO_ROOT / "docs" / "performance.md"
# What an inspect runs through: the agent runtime, the inspector, the store, the context blueprints.
INSPECT_PATH = (
    "hango/agent",
    "hango/inspector",
    "hango/store",
    "blueprints/context.py",
    "blueprints/context_schemas.py",
    "blueprints/context_try.py",
    "blueprints/overrides.py",
    "blueprints/suggestions.py",
    "blueprints/compact.py",
    "blueprints/calls.py",
)
# The benchmark that writes each table (``--write-doc``); each measures the inspect path unless ``PATHS``
# names what it measures instead.
WRITERS = {
    "inspect": "scripts.bench.inspector",
    "letta": "scripts.bench.letta",
    "mcp": "scripts.bench.mcp",
    "tool_search": "scripts.bench.tool_search",
    "deferred_tools": "scripts.bench.deferred_tools",
}
PATHS = {
    "tool_search": ("hango/tool_search.py", "tests/data/tool_catalog", "scripts/bench/tool_search.py"),
    "deferred_tools": (
        "scripts/bench/deferred_tools.py",
        "hango/agent/toolset.py",
        "hango/agent/middleware/tool_search.py",
        "hango/tool_search.py",
    ),
}
_TABLE = re.compile(
    r"<!-- bench:(?P<name>[\w-]+) (?P<attrs>[^>]*?) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->", re.S
)
_ATTR = re.compile(r'(\w+)=("[^"]*"|\S+)')


@dataclass(frozen=True)
class Table:
    """One benchmark-written table: its name, the commit it measured, and whether that tree was dirty."""

    name: str
    commit: str
    dirty: bool
    date: str
    load: str
    body: str


def git(*argv: str, cwd: Path = REPO_ROOT) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def path_of(name: str) -> tuple[str, ...]:
    """What the table ``name`` measures: its own paths, or the inspect path."""
    return PATHS.get(name, INSPECT_PATH)


def measured_commit(cwd: Path = REPO_ROOT, path: tuple[str, ...] = INSPECT_PATH) -> tuple[str, bool]:
    """The commit checked out, and whether ``path`` (the inspect path) has uncommitted changes."""
    changed = git("status", "--porcelain", "--", *path, cwd=cwd)
    return git("rev-parse", "HEAD", cwd=cwd), bool(changed)


def tables(text: str) -> list[Table]:
    """Every benchmark-written table of a document."""
    found = []
    for match in _TABLE.finditer(text):
        attrs = {k: v.strip('"') for k, v in _ATTR.findall(match["attrs"])}
        found.append(
            Table(
                match["name"],
                attrs.get("commit", ""),
                attrs.get("dirty") != "no",
                attrs.get("date", ""),
                attrs.get("load", ""),
                match["body"],
            )
        )
    return found


def write_table(name: str, body: str, doc: Path = DOC, cwd: Path = REPO_ROOT) -> None:
    """Put ``body`` between ``name``'s markers in ``doc``, with the commit, date and load it ran at."""
    commit, dirty = measured_commit(cwd, path_of(name))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")
    opening = (
        f'<!-- bench:{name} commit={commit} dirty={"yes" if dirty else "no"} date={date} load="{load}" -->'
    )
    text = doc.read_text()
    block = f"{opening}\n{body.rstrip()}\n<!-- /bench:{name} -->"
    pattern = re.compile(
        rf"<!-- bench:{re.escape(name)} [^>]*-->\n.*?<!-- /bench:{re.escape(name)} -->", re.S
    )
    if not pattern.search(text):
        raise ValueError(f"{doc} has no <!-- bench:{name} ... --> markers")
    doc.write_text(pattern.sub(lambda _: block, text, count=1))


def changed_since(commit: str, cwd: Path = REPO_ROOT, path: tuple[str, ...] = INSPECT_PATH) -> list[str]:
    """The commits after ``commit`` (up to HEAD) that changed ``path`` (the inspect path), newest first."""
    log = git("log", "--format=%h %s", f"{commit}..HEAD", "--", *path, cwd=cwd)
    return log.splitlines()
