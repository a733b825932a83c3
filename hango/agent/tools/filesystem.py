"""The filesystem tools: ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``, ``grep``.

They work on the virtual filesystem of ``vfs`` (session files, ``/memories``, ``/skills``).
Output is bounded: ``read_file`` shows at most ``MAX_READ_LINES`` lines of at most
``MAX_LINE_CHARS`` characters, ``glob`` at most ``MAX_GLOB_PATHS`` paths, ``grep`` at
most ``MAX_GREP_MATCHES`` matches; each says when it left something out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hango.agent.tools import vfs
from hango.agent.tools.base import PathUse, Tool, ToolContext, ToolFailure, schema
from hango.agent.tools.paths import MAX_PATH_CHARS, MEMORIES, SKILLS, children, glob_regex, normal_path
from hango.agent.tools.search import MAX_GREP_CHARS, MAX_LINE_CHARS, SYNTAX, Scan, compile_pattern, cut
from hango.messages import ToolDef

MAX_READ_LINES = 2000
MAX_GLOB_PATHS = 500
MAX_GREP_MATCHES = 200
MAX_PATTERN_CHARS = 1000

PATH = {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS, "description": "an absolute path"}
FOLDER = {**PATH, "default": "/", "description": "the folder to look in (absolute); default /"}
TEXT = {"type": "string", "maxLength": vfs.MAX_FILE_CHARS}
PATTERN = {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN_CHARS}

LS = ToolDef(
    name="ls",
    description=(
        "List the files and folders directly inside a folder (folders end with /). "
        f"The root always holds {MEMORIES}/ (your memory) and {SKILLS}/ (skills, read-only)."
    ),
    input_schema=schema({"path": FOLDER}),
)
READ_FILE = ToolDef(
    name="read_file",
    description=(
        "Read a file, with line numbers. offset is the number of lines to skip, limit how many to show "
        f"(at most {MAX_READ_LINES}); the answer says when there is more. Lines longer than "
        f"{MAX_LINE_CHARS} characters are cut."
    ),
    input_schema=schema(
        {
            "path": PATH,
            "offset": {"type": "integer", "minimum": 0, "maximum": 10_000_000, "default": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ_LINES, "default": MAX_READ_LINES},
        },
        ("path",),
    ),
)
WRITE_FILE = ToolDef(
    name="write_file",
    description=(
        f"Create a file, or replace its whole content (at most {vfs.MAX_FILE_CHARS} characters; "
        f"{vfs.MAX_MEMORY_FILE_CHARS} under {MEMORIES}/). Files under {MEMORIES}/ persist across sessions."
    ),
    input_schema=schema({"path": PATH, "content": TEXT}, ("path", "content")),
)
EDIT_FILE = ToolDef(
    name="edit_file",
    description=(
        "Replace old_string with new_string in a file. old_string must match exactly (whitespace included) "
        "and only once, unless replace_all is true; include surrounding lines to make it unique."
    ),
    input_schema=schema(
        {
            "path": PATH,
            "old_string": {**TEXT, "minLength": 1},
            "new_string": TEXT,
            "replace_all": {"type": "boolean", "default": False},
        },
        ("path", "old_string", "new_string"),
    ),
)
GLOB = ToolDef(
    name="glob",
    description=(
        "Find files by path pattern: * and ? match within one path segment, ** any number of folders "
        f"(e.g. **/*.md); no other character is special. A relative pattern is taken from path. "
        f"At most {MAX_GLOB_PATHS} paths, sorted."
    ),
    input_schema=schema({"pattern": PATTERN, "path": FOLDER}, ("pattern",)),
)
GREP = ToolDef(
    name="grep",
    description=(
        f"Search file contents with a regular expression in {SYNTAX}, line by line; answers "
        "path:line: text. glob narrows the files: a pattern without / matches file names (e.g. *.py), "
        f"one with / matches paths from path. At most {MAX_GREP_MATCHES} matches; the search stops "
        f"after {MAX_GREP_CHARS:,} characters of files."
    ),
    input_schema=schema({"pattern": PATTERN, "path": FOLDER, "glob": PATTERN}, ("pattern",)),
)


def ls(args: dict[str, Any], ctx: ToolContext) -> str:
    """The direct children of a folder, one per line."""
    folder = normal_path(args.get("path", "/"))
    paths = list(vfs.files(ctx, folder, content=False))
    entries = children(folder, paths)
    if folder == "/":
        entries = sorted({*entries, f"{MEMORIES}/", f"{SKILLS}/"})
    if entries:
        return "\n".join(entries)
    if paths == [folder]:
        return folder
    if folder in vfs.FOLDERS:
        return f"{folder} is empty"
    raise ToolFailure(f"no file or folder at {folder}")


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """A window of the file's lines, numbered like ``cat -n``."""
    path = normal_path(args["path"])
    lines = vfs.read(ctx, path).splitlines()
    offset, limit = args.get("offset", 0), args.get("limit", MAX_READ_LINES)
    if not lines:
        return f"{path} is empty"
    if offset >= len(lines):
        raise ToolFailure(f"offset {offset} is past the end of {path} ({len(lines)} lines)")
    window = lines[offset : offset + limit]
    shown = [f"{offset + n:6}\t{cut(line, MAX_LINE_CHARS)}" for n, line in enumerate(window, 1)]
    end = offset + len(window)
    if end < len(lines):
        shown.append(f"(lines {offset + 1}-{end} of {len(lines)}; read on with offset={end})")
    return "\n".join(shown)


def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """Create or overwrite a file."""
    path = normal_path(args["path"])
    vfs.write(ctx, path, args["content"])
    return f"wrote {len(args['content'])} characters to {path}"


def edit_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """Replace an exact, unique (or every, with ``replace_all``) occurrence of a string in a file."""
    path = normal_path(args["path"])
    old, new = args["old_string"], args["new_string"]
    if old == new:
        raise ToolFailure("old_string and new_string are the same: nothing to change")
    content = vfs.read(ctx, path)
    count = content.count(old)
    if count == 0:
        raise ToolFailure(f"old_string was not found in {path}; read_file shows its exact text")
    replace_all = args.get("replace_all", False)
    if count > 1 and not replace_all:
        raise ToolFailure(
            f"old_string appears {count} times in {path}; add surrounding text to make it unique, "
            "or set replace_all"
        )
    vfs.write(ctx, path, content.replace(old, new, -1 if replace_all else 1))
    replaced = count if replace_all else 1
    return f"replaced {replaced} occurrence{'s' if replaced > 1 else ''} in {path}"


def glob(args: dict[str, Any], ctx: ToolContext) -> str:
    """The paths under a folder that match a pattern, sorted."""
    folder = normal_path(args.get("path", "/"))
    regex = glob_regex(args["pattern"], folder)
    matches = []
    for path in vfs.files(ctx, folder, content=False):
        ctx.state.check_deadline()
        if regex.fullmatch(path):
            matches.append(path)
    if not matches:
        return f"no files match {args['pattern']} in {folder}"
    return _bounded(matches, MAX_GLOB_PATHS, "paths")


def grep(args: dict[str, Any], ctx: ToolContext) -> str:
    """Lines matching a regex in the files under a folder (or in one file), as ``path:line: text``.

    The files stream in path order, a few at a time (``vfs.contents``), so a grep holds
    at most one batch of files in memory however many there are.
    """
    folder = normal_path(args.get("path", "/"))
    scan = Scan(compile_pattern(args["pattern"]), ctx.state, MAX_GREP_MATCHES)
    wanted = _name_filter(args.get("glob"), folder)
    with vfs.contents(ctx, folder) as files:
        for path, content in files:
            if wanted(path) and scan.search(path, content):
                break
    notes = scan.notes()
    if not scan.matches:
        return "\n".join([f"no matches for {args['pattern']} in {folder}", *notes])
    return "\n".join([*scan.matches[:MAX_GREP_MATCHES], *notes])


def _name_filter(pattern: str | None, folder: str) -> Callable[[str], object]:
    """A predicate on paths for grep's ``glob``: file names without a ``/``, paths from ``folder`` with one."""
    if pattern is None:
        return lambda path: True
    if "/" in pattern:
        return glob_regex(pattern, folder).fullmatch
    regex = glob_regex(pattern, "/")
    return lambda path: regex.fullmatch("/" + path.rpartition("/")[2]) is not None


def _bounded(lines: list[str], limit: int, what: str) -> str:
    shown = "\n".join(lines[:limit])
    if len(lines) > limit:
        shown += f"\n(only the first {limit} {what} are shown; narrow the search)"
    return shown


def filesystem_tools() -> list[Tool]:
    """The six filesystem tools."""
    return [
        Tool(LS, ls, PathUse("list", default=FOLDER["default"])),
        Tool(READ_FILE, read_file, PathUse("read")),
        Tool(WRITE_FILE, write_file, PathUse("write")),
        Tool(EDIT_FILE, edit_file, PathUse("edit")),
        Tool(GLOB, glob, PathUse("list", default=FOLDER["default"])),
        Tool(GREP, grep, PathUse("search", default=FOLDER["default"])),
    ]


FILESYSTEM_TOOLS: tuple[str, ...] = tuple(tool.name for tool in filesystem_tools())
