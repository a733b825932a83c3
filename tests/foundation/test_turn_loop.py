"""One turn loop: a run, a scratch turn and a subagent drive their turns through ``take_turns`` only.

Read with ``ast`` from the source, like the layer test: a function that calls both phases of a
turn (``model_phase`` and ``tool_phase``) is a turn loop, and hango has exactly one. A second one,
anywhere in ``hango/``, fails here with its module and name.
"""

from __future__ import annotations

import ast

from tests.foundation.test_layers import sources_under

PHASES = {"model_phase", "tool_phase"}
THE_LOOP = ("hango.agent.turn_loop", "take_turns")


def _called(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def turn_loops(sources: dict[str, str]) -> list[tuple[str, str]]:
    """Every (module, function) of ``sources`` that calls both phases of a turn."""
    return sorted(
        (module, node.name)
        for module, source in sources.items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _called(node) >= PHASES
    )


def test_there_is_one_turn_loop():
    assert turn_loops(sources_under("hango")) == [THE_LOOP]


def test_a_second_turn_loop_fails_the_pin():
    sources = sources_under("hango")
    sources["hango.agent.scratch"] += (
        "\n\ndef _my_turns(chain, state, handler, ctx):\n"
        "    response = model_phase(chain, state, handler)\n"
        "    return turns.tool_phase(chain, state, ctx, tool_uses(response.message))\n"
    )
    assert turn_loops(sources) == [("hango.agent.scratch", "_my_turns"), THE_LOOP]


def test_the_phases_are_called_only_by_the_turn_loop():
    callers = sorted(
        (module, node.name)
        for module, source in sources_under("hango").items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and PHASES & _called(node)
    )
    assert callers == [THE_LOOP]
