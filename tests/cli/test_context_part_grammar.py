"""The CLI reads a part id's seq with the server's one seq parser (``hango/seqs.py``), not a second one."""

from __future__ import annotations

import ast

from hango.agent import parts
from hango.cli import context_parts
from hango.config import REPO_ROOT
from hango.seqs import message_seq

KNOWN = ["system:agent", "tool:ls", "summary", "message:2", "message:10", "message:11", "scratch:0badcafe:12"]


def test_the_cli_expands_a_range_with_the_servers_seq_parser() -> None:
    assert context_parts.message_seq is parts.message_seq is message_seq
    assert context_parts.expand(["message:2..11"], KNOWN) == ["message:2", "message:10", "message:11"]
    assert context_parts.expand(["message:0..10"], KNOWN) == ["message:2", "message:10"]


def test_no_cli_module_parses_a_part_ids_seq_of_its_own() -> None:
    """The only pattern left in the CLI reads the range a user types (``message:A..B``), not a part id."""
    patterns = []
    for path in sorted((REPO_ROOT / "hango" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "message:(" in node.value:
                patterns.append(node.value)
    assert patterns == [r"^message:(\d+)\.\.(\d+)$"]
