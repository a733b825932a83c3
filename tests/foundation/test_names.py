"""Names that say what they hold: no two twins under one name, and each constant named for its value's role.

The stored and API-visible values stay as they were ("try" is a run's kind, "scratch" a
part's, "context_try" a call's purpose); only the Python names say which is which.
"""

from __future__ import annotations

import ast

from hango.agent import parts, state
from hango.store import runs
from tests.foundation.test_layers import sources_under


def test_the_scratch_constants_name_what_they_hold() -> None:
    assert runs.SCRATCH_TURN_KIND == "try"  # the kind of a run that is a whole-turn try
    assert parts.SCRATCH_PART_KIND == "scratch"  # the kind (and id prefix) of a scratch turn's parts
    assert state.TRY_PURPOSE == "context_try"  # the purpose every try's calls are billed as
    assert (state.ONE_CALL_TRY.name, state.ONE_CALL_TRY.purpose) == ("try", "context_try")
    assert not any(hasattr(module, "SCRATCH") for module in (runs, parts, state))


def test_no_two_modules_of_hango_are_a_snapshot_or_a_catalog() -> None:
    """One ``snapshot`` module (the inspect response's) and one ``catalog`` (the operator's MCP servers)."""
    names = sorted(sources_under("hango"))

    assert [n for n in names if n.rsplit(".", 1)[-1] == "snapshot"] == ["hango.inspector.snapshot"]
    assert [n for n in names if n.rsplit(".", 1)[-1] == "catalog"] == ["hango.mcp.catalog"]


def test_one_function_of_hango_is_named_assemble() -> None:
    defined = [
        module
        for module, source in sources_under("hango").items()
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "assemble"
    ]

    assert defined == ["hango.inspector.inspection"]
