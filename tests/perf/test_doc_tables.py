"""The benchmark tables of docs/performance.md name the commit they measured, and no later commit changed
what they measure.

A rule about the document, read from git, never a timing: a table written at
commit C is stale once a commit after C (up to HEAD) changed the inspect path.
The commit that writes the table into the document changes only the document,
so it never counts. When this fails, run the benchmark the table names with
``--write-doc`` and commit the document (``docs/performance.md``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hango.config import REPO_ROOT
from scripts.bench.doc_tables import (
    DOC,
    INSPECT_PATH,
    WRITERS,
    changed_since,
    git,
    path_of,
    tables,
    write_table,
)

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (REPO_ROOT / ".git").exists(), reason="needs the git history"
)

TABLES = tables(DOC.read_text())


def test_the_performance_doc_has_a_table_for_each_benchmark_that_writes_one() -> None:
    assert sorted(t.name for t in TABLES) == sorted(WRITERS)


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_each_benchmark_table_measured_a_committed_tree_of_this_history(table) -> None:
    assert not table.dirty, f"bench:{table.name} was measured with uncommitted changes: regenerate it"
    ancestor = subprocess.run(
        ["git", "merge-base", "--is-ancestor", table.commit, "HEAD"], cwd=REPO_ROOT, check=False
    )
    assert ancestor.returncode == 0, f"bench:{table.name} names {table.commit!r}, not a commit before HEAD"


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_no_commit_after_a_benchmark_table_changed_the_inspect_path(table) -> None:
    later = changed_since(table.commit, path=path_of(table.name))

    assert not later, (
        f"bench:{table.name} measured {table.commit[:12]}, but these later commits changed what it "
        f"measures: regenerate it (python -m {WRITERS[table.name]} --write-doc) and commit the doc\n"
        + "\n".join(later)
    )


def repository(tmp_path: Path) -> Path:
    """A scratch repository with a document holding one table, and one file on the inspect path."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "hango" / "agent").mkdir(parents=True)
    (root / "docs" / "performance.md").write_text(
        "# figures\n\n<!-- bench:inspect commit=none dirty=yes date=never load=0 -->\nold\n<!-- /bench:inspect -->\n"
    )
    (root / "hango" / "agent" / "inspect.py").write_text("x = 1\n")
    for argv in (("init", "-q"), ("config", "user.email", "t@t.test"), ("config", "user.name", "t")):
        git(*argv, cwd=root)
    commit(root, "code")
    return root


def commit(root: Path, message: str) -> None:
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", message, cwd=root)


def test_the_commit_that_writes_a_table_is_not_a_change_to_the_inspect_path(tmp_path: Path) -> None:
    root = repository(tmp_path)
    doc = root / "docs" / "performance.md"
    write_table("inspect", "| a | b |\n|---|---|", doc=doc, cwd=root)
    commit(root, "figures")

    (table,) = tables(doc.read_text())

    assert table.commit == git("rev-parse", "HEAD~1", cwd=root)
    assert not table.dirty
    assert table.body == "| a | b |\n|---|---|\n"
    assert changed_since(table.commit, cwd=root) == []


def test_a_change_to_the_inspect_path_after_the_table_makes_it_stale(tmp_path: Path) -> None:
    root = repository(tmp_path)
    doc = root / "docs" / "performance.md"
    write_table("inspect", "| a |", doc=doc, cwd=root)
    commit(root, "figures")
    (root / "hango" / "agent" / "inspect.py").write_text("x = 2\n")
    commit(root, "slower inspect")

    (table,) = tables(doc.read_text())

    assert [line.split(" ", 1)[1] for line in changed_since(table.commit, cwd=root)] == ["slower inspect"]


def test_a_table_measured_on_uncommitted_inspect_code_says_so(tmp_path: Path) -> None:
    root = repository(tmp_path)
    (root / "hango" / "agent" / "inspect.py").write_text("x = 3\n")
    doc = root / "docs" / "performance.md"
    write_table("inspect", "| a |", doc=doc, cwd=root)

    (table,) = tables(doc.read_text())

    assert table.dirty


def test_the_inspect_path_covers_the_runtime_the_store_and_the_context_blueprints() -> None:
    assert {"hango/agent", "hango/inspector", "hango/store", "blueprints/context.py"} <= set(INSPECT_PATH)
    missing = [p for p in INSPECT_PATH if p.startswith("blueprints/") and not (REPO_ROOT / p).exists()]
    assert missing == []


def test_a_table_with_its_own_paths_goes_stale_on_a_change_there_and_not_on_the_inspect_path(
    tmp_path: Path,
) -> None:
    root = repository(tmp_path)
    doc = root / "docs" / "performance.md"
    doc.write_text(
        doc.read_text() + "\n<!-- bench:tool_search commit=none dirty=yes -->\n<!-- /bench:tool_search -->\n"
    )
    (root / "hango" / "tool_search.py").write_text("x = 1\n")
    commit(root, "ranking")
    write_table("tool_search", "| a |", doc=doc, cwd=root)
    commit(root, "figures")
    (root / "hango" / "agent" / "inspect.py").write_text("x = 2\n")
    commit(root, "slower inspect")
    table = next(t for t in tables(doc.read_text()) if t.name == "tool_search")
    assert changed_since(table.commit, cwd=root, path=path_of("tool_search")) == []

    (root / "hango" / "tool_search.py").write_text("x = 2\n")
    commit(root, "new ranking")

    later = changed_since(table.commit, cwd=root, path=path_of("tool_search"))
    assert [line.split(" ", 1)[1] for line in later] == ["new ranking"]
