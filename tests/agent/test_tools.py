"""The filesystem and todo tools, run through ``run_tool`` on the real database."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from hango.agent.state import Skill
from hango.agent.tools import filesystem, vfs
from hango.agent.tools.base import ToolContext, run_tool
from hango.agent.tools.filesystem import filesystem_tools
from hango.agent.tools.todos import todo_tools
from hango.messages import ToolResultBlock, ToolUseBlock
from tests.agent.conftest import Seeded
from tests.support.sql import count_statements

TOOLS = {tool.name: tool for tool in filesystem_tools() + todo_tools()}


def call(ctx: ToolContext, name: str, **args) -> ToolResultBlock:
    return run_tool(TOOLS[name], ToolUseBlock("toolu_1", name, args), ctx)


def ok(ctx: ToolContext, name: str, **args) -> str:
    result = call(ctx, name, **args)
    assert not result.is_error, result.content
    return result.content


def fails(ctx: ToolContext, name: str, **args) -> str:
    result = call(ctx, name, **args)
    assert result.is_error, result.content
    return result.content


def write(ctx: ToolContext, files: dict[str, str]) -> None:
    for path, content in files.items():
        ok(ctx, "write_file", path=path, content=content)


# --- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("notes.md", "paths are absolute"),
        ("/a/../b.md", "no '.' or '..' segments"),
        ("/a/./b.md", "no '.' or '..' segments"),
        ("/a\x00b", "no control characters"),
        ("/a\nb", "no control characters"),
    ],
)
def test_bad_paths_fail_clearly(ctx: ToolContext, path: str, message: str) -> None:
    assert message in fails(ctx, "write_file", path=path, content="x")
    assert message in fails(ctx, "read_file", path=path)


def test_too_long_path_is_refused_by_the_schema(ctx: ToolContext) -> None:
    assert "invalid arguments for read_file" in fails(ctx, "read_file", path="/" + "a" * 500)


def test_paths_are_normalised(ctx: ToolContext) -> None:
    ok(ctx, "write_file", path="//docs///plan.md/", content="step one")
    assert ok(ctx, "ls") == "/docs/\n/memories/\n/skills/"
    assert ok(ctx, "read_file", path="/docs/plan.md") == "     1\tstep one"


# --- read and write ------------------------------------------------------------------------


def test_write_then_read_numbers_lines_like_cat_n(ctx: ToolContext) -> None:
    assert ok(ctx, "write_file", path="/notes.md", content="first\nsecond\n") == (
        "wrote 13 characters to /notes.md"
    )
    assert ok(ctx, "read_file", path="/notes.md") == "     1\tfirst\n     2\tsecond"


def test_write_overwrites(ctx: ToolContext) -> None:
    write(ctx, {"/notes.md": "old"})
    write(ctx, {"/notes.md": "new"})
    assert ok(ctx, "read_file", path="/notes.md") == "     1\tnew"
    assert ctx.store.session_files.get(ctx.state.session_id, "/notes.md").content == "new"


def test_read_window_says_when_there_is_more(ctx: ToolContext) -> None:
    write(ctx, {"/n.txt": "\n".join(f"line {n}" for n in range(1, 11))})
    assert ok(ctx, "read_file", path="/n.txt", offset=2, limit=3) == (
        "     3\tline 3\n     4\tline 4\n     5\tline 5\n(lines 3-5 of 10; read on with offset=5)"
    )
    assert ok(ctx, "read_file", path="/n.txt", offset=8) == "     9\tline 9\n    10\tline 10"
    assert "offset 10 is past the end of /n.txt (10 lines)" in fails(
        ctx, "read_file", path="/n.txt", offset=10
    )


def test_read_cuts_long_lines_and_reports_empty_files(ctx: ToolContext) -> None:
    write(ctx, {"/long.txt": "x" * (filesystem.MAX_LINE_CHARS + 5), "/empty.txt": ""})
    assert (
        ok(ctx, "read_file", path="/long.txt") == "     1\t" + "x" * filesystem.MAX_LINE_CHARS + " [line cut]"
    )
    assert ok(ctx, "read_file", path="/empty.txt") == "/empty.txt is empty"


def test_read_missing_file_and_folders_fail(ctx: ToolContext) -> None:
    assert "no file at /nope.md" in fails(ctx, "read_file", path="/nope.md")
    for folder in ("/", "/memories", "/skills/"):
        assert "is a folder" in fails(ctx, "read_file", path=folder)


def test_too_large_content_is_refused(ctx: ToolContext) -> None:
    big = "x" * (vfs.MAX_FILE_CHARS + 1)
    assert "invalid arguments for write_file" in fails(ctx, "write_file", path="/big.txt", content=big)
    write(ctx, {"/big.txt": "ab" * (vfs.MAX_FILE_CHARS // 2)})
    message = fails(ctx, "edit_file", path="/big.txt", old_string="a", new_string="aa", replace_all=True)
    assert f"a file holds at most {vfs.MAX_FILE_CHARS}" in message
    assert len(ctx.store.session_files.get(ctx.state.session_id, "/big.txt").content) == vfs.MAX_FILE_CHARS


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", {}),
        ("read_file", {"path": "/a", "limit": 0}),
        ("read_file", {"path": "/a", "offset": -1}),
        ("write_file", {"path": "/a", "content": "x", "mode": "append"}),
        ("edit_file", {"path": "/a", "old_string": "", "new_string": "x"}),
        ("grep", {"pattern": ""}),
        ("write_todos", {"todos": [{"content": "x", "status": "done"}]}),
        ("write_todos", {"todos": [{"content": "x"}]}),
    ],
)
def test_schema_invalid_input_is_an_error_result(ctx: ToolContext, name: str, args: dict) -> None:
    result = call(ctx, name, **args)
    assert result == ToolResultBlock("toolu_1", result.content, is_error=True)
    assert result.content.startswith(f"invalid arguments for {name}: ")


def test_files_belong_to_their_session(ctx: ToolContext, seeded: Seeded) -> None:
    write(ctx, {"/mine.md": "secret"})
    other = ctx.store.sessions.create(seeded.agent_id, seeded.owner_id, "other")
    elsewhere = dataclasses.replace(ctx, state=dataclasses.replace(ctx.state, session_id=other.id))
    assert "no file at /mine.md" in fails(elsewhere, "read_file", path="/mine.md")
    assert ok(elsewhere, "glob", pattern="**") == "no files match ** in /"


# --- edit ----------------------------------------------------------------------------------


def test_edit_replaces_a_unique_match(ctx: ToolContext) -> None:
    write(ctx, {"/a.py": "x = 1\ny = 2\n"})
    assert ok(ctx, "edit_file", path="/a.py", old_string="y = 2", new_string="y = 3") == (
        "replaced 1 occurrence in /a.py"
    )
    assert ctx.store.session_files.get(ctx.state.session_id, "/a.py").content == "x = 1\ny = 3\n"


def test_edit_failures_leave_the_file_alone(ctx: ToolContext) -> None:
    write(ctx, {"/a.py": "x = 1\nx = 1\n"})
    ambiguous = fails(ctx, "edit_file", path="/a.py", old_string="x = 1", new_string="x = 2")
    assert "appears 2 times in /a.py" in ambiguous
    assert "was not found in /a.py" in fails(ctx, "edit_file", path="/a.py", old_string="z", new_string="y")
    assert "are the same" in fails(ctx, "edit_file", path="/a.py", old_string="x", new_string="x")
    assert "no file at /b.py" in fails(ctx, "edit_file", path="/b.py", old_string="x", new_string="y")
    assert ctx.store.session_files.get(ctx.state.session_id, "/a.py").content == "x = 1\nx = 1\n"


def test_edit_replace_all(ctx: ToolContext) -> None:
    write(ctx, {"/a.py": "x = 1\nx = 1\n"})
    result = ok(ctx, "edit_file", path="/a.py", old_string="1", new_string="2", replace_all=True)
    assert result == "replaced 2 occurrences in /a.py"
    assert ok(ctx, "read_file", path="/a.py") == "     1\tx = 2\n     2\tx = 2"


# --- ls and glob ---------------------------------------------------------------------------


def test_ls_lists_direct_children_with_implied_folders(ctx: ToolContext) -> None:
    write(ctx, {"/b.md": "", "/src/main.py": "", "/src/lib/util.py": "", "/a.md": ""})
    assert ok(ctx, "ls") == "/a.md\n/b.md\n/memories/\n/skills/\n/src/"
    assert ok(ctx, "ls", path="/src") == "/src/lib/\n/src/main.py"
    assert ok(ctx, "ls", path="/src/main.py") == "/src/main.py"
    assert "no file or folder at /nope" in fails(ctx, "ls", path="/nope")


def test_ls_on_an_empty_session_still_shows_the_mounts(ctx: ToolContext) -> None:
    assert ok(ctx, "ls") == "/memories/\n/skills/"
    assert ok(ctx, "ls", path="/memories") == "/memories is empty"


def test_glob_matches_segments_and_folders(ctx: ToolContext) -> None:
    write(
        ctx, {"/a.md": "", "/docs/b.md": "", "/docs/deep/c.md": "", "/docs/d.txt": "", "/memories/m.md": ""}
    )
    assert ok(ctx, "glob", pattern="*.md") == "/a.md"
    assert ok(ctx, "glob", pattern="**/*.md") == "/a.md\n/docs/b.md\n/docs/deep/c.md\n/memories/m.md"
    assert ok(ctx, "glob", pattern="*.??", path="/docs") == "/docs/b.md"
    assert ok(ctx, "glob", pattern="/docs/**") == "/docs/b.md\n/docs/d.txt\n/docs/deep/c.md"
    assert ok(ctx, "glob", pattern="*.rs") == "no files match *.rs in /"


def test_glob_output_is_bounded(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filesystem, "MAX_GLOB_PATHS", 2)
    write(ctx, {"/1.md": "", "/2.md": "", "/3.md": ""})
    assert (
        ok(ctx, "glob", pattern="*.md")
        == "/1.md\n/2.md\n(only the first 2 paths are shown; narrow the search)"
    )


def test_glob_and_grep_read_each_table_once(ctx: ToolContext, engine: sa.Engine) -> None:
    write(ctx, {f"/f{n}.md": "hello" for n in range(5)} | {"/memories/m.md": "hello"})
    for name, args in (("glob", {"pattern": "**"}), ("grep", {"pattern": "hello"}), ("ls", {})):
        with count_statements(engine) as statements:
            ok(ctx, name, **args)
        assert len(statements) == 2, (name, statements)
        assert {"session_files" in s for s in statements} == {True, False}
    with count_statements(engine) as statements:
        ok(ctx, "grep", pattern="hello", path="/docs")
    assert len(statements) == 1


# --- grep ----------------------------------------------------------------------------------


def test_grep_answers_path_line_text(ctx: ToolContext) -> None:
    write(ctx, {"/a.py": "import os\nprint(1)\n", "/b/c.py": "x = 1\nimport re\n", "/b/d.md": "import me"})
    assert (
        ok(ctx, "grep", pattern=r"^import \w+$")
        == "/a.py:1: import os\n/b/c.py:2: import re\n/b/d.md:1: import me"
    )
    assert ok(ctx, "grep", pattern="import", glob="*.py") == "/a.py:1: import os\n/b/c.py:2: import re"
    assert ok(ctx, "grep", pattern="import", path="/b", glob="*.md") == "/b/d.md:1: import me"
    assert ok(ctx, "grep", pattern="import", glob="/b/*") == "/b/c.py:2: import re\n/b/d.md:1: import me"
    assert ok(ctx, "grep", pattern="import", path="/a.py") == "/a.py:1: import os"
    assert ok(ctx, "grep", pattern="nothing") == "no matches for nothing in /"


def test_grep_invalid_regex_fails(ctx: ToolContext) -> None:
    assert "invalid regular expression '(unclosed'" in fails(ctx, "grep", pattern="(unclosed")


def test_grep_output_is_bounded(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filesystem, "MAX_GREP_MATCHES", 3)
    write(ctx, {"/a.txt": "hit\n" * 5, "/b.txt": "hit"})
    assert ok(ctx, "grep", pattern="hit") == (
        "/a.txt:1: hit\n/a.txt:2: hit\n/a.txt:3: hit\n(only the first 3 matches are shown; narrow the search)"
    )


# --- memory and skills ---------------------------------------------------------------------


def test_memory_paths_write_the_agents_memory(ctx: ToolContext) -> None:
    ok(ctx, "write_file", path="/memories//prefs.md", content="likes tea")
    row = ctx.store.memory_files.get(ctx.state.agent.id, "/memories/prefs.md")
    assert row.content == "likes tea"
    assert ctx.store.session_files.get(ctx.state.session_id, "/memories/prefs.md") is None
    assert ctx.state.memory == {"/memories/prefs.md": "likes tea"}
    ok(ctx, "edit_file", path="/memories/prefs.md", old_string="tea", new_string="coffee")
    assert ctx.state.memory == {"/memories/prefs.md": "likes coffee"}
    assert ok(ctx, "read_file", path="/memories/prefs.md") == "     1\tlikes coffee"
    assert ok(ctx, "ls", path="/memories") == "/memories/prefs.md"


def test_memory_outlives_the_session(ctx: ToolContext, seeded: Seeded) -> None:
    write(ctx, {"/memories/facts.md": "the sky is blue"})
    other = ctx.store.sessions.create(seeded.agent_id, seeded.owner_id, "later")
    later = dataclasses.replace(ctx, state=dataclasses.replace(ctx.state, session_id=other.id))
    assert ok(later, "read_file", path="/memories/facts.md") == "     1\tthe sky is blue"


def test_memory_files_have_their_own_size_bound(ctx: ToolContext) -> None:
    big = "x" * (vfs.MAX_MEMORY_FILE_CHARS + 1)
    message = fails(ctx, "write_file", path="/memories/big.md", content=big)
    assert f"a file holds at most {vfs.MAX_MEMORY_FILE_CHARS}" in message
    assert ctx.state.memory == {}


def test_skills_are_readable_and_read_only(ctx: ToolContext) -> None:
    ctx.state.skills = [Skill("deploy", "Ship it", "1. build\n2. push", ("grep",))]
    assert ok(ctx, "ls", path="/skills") == "/skills/deploy/"
    assert ok(ctx, "ls", path="/skills/deploy") == "/skills/deploy/SKILL.md"
    assert ok(ctx, "read_file", path="/skills/deploy/SKILL.md") == "     1\t1. build\n     2\t2. push"
    assert ok(ctx, "grep", pattern="push", path="/skills") == "/skills/deploy/SKILL.md:2: 2. push"
    assert "no file at /skills/other/SKILL.md" in fails(ctx, "read_file", path="/skills/other/SKILL.md")
    assert "read-only" in fails(ctx, "write_file", path="/skills/deploy/SKILL.md", content="x")
    assert "read-only" in fails(ctx, "write_file", path="/skills/new/SKILL.md", content="x")
    assert "read-only" in fails(
        ctx, "edit_file", path="/skills/deploy/SKILL.md", old_string="1", new_string="2"
    )


# --- todos ---------------------------------------------------------------------------------


def test_write_todos_persists_and_updates_the_state(ctx: ToolContext) -> None:
    todos = [
        {"content": "read the spec", "status": "completed"},
        {"content": "write the code", "status": "in_progress"},
        {"content": "test it", "status": "pending"},
    ]
    assert ok(ctx, "write_todos", todos=todos) == (
        "todo list updated:\n1. [x] read the spec\n2. [~] write the code\n3. [ ] test it"
    )
    assert ctx.store.todos.get(ctx.state.session_id) == todos
    assert ctx.state.todos == todos
    assert ok(ctx, "write_todos", todos=[]) == "todo list updated:\nno todos yet"
    assert ctx.store.todos.get(ctx.state.session_id) == []


def test_write_todos_for_a_deleted_session_fails(ctx: ToolContext) -> None:
    ctx.store.sessions.delete(ctx.state.session_id)
    assert "no longer exists" in fails(ctx, "write_todos", todos=[])
