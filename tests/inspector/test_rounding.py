"""One rounding rule for token figures: a figure scaled alone goes to the nearest token (a half to the even
one), the shares of a shown total by the largest remainder; every reader rounds through ``hango.rounding``."""

from __future__ import annotations

import ast

from hango.agent.ledger.record import SentCall, SentPart
from hango.agent.ledger.verdict import Outlook
from hango.config import REPO_ROOT
from hango.inspector.calibration import Calibration
from hango.rounding import apportion, scaled


def test_a_scaled_figure_goes_to_the_nearest_token_a_half_to_the_even_one() -> None:
    assert [scaled(t, 0.5) for t in (3, 5, 7)] == [2, 2, 4]
    assert Calibration(1.5, 3).apply(5) == scaled(5, 1.5) == 8
    call = SentCall((SentPart("system:agent", "a", 5), SentPart("message:1", "m", 2)), (1,), (1, 1))
    assert Outlook("live", scale=0.5).through(call) == (2, 4), "the expected read's prefixes, one rule"


def test_the_shares_of_a_shown_total_add_up_to_it_by_the_largest_remainder() -> None:
    assert apportion(10, [1, 1, 1]) == [4, 3, 3]
    assert apportion(3201, [1000, 1000, 1001]) == [1067, 1066, 1068], "a tie goes to the earlier share"
    assert sum(apportion(7, [5, 2, 9, 1])) == 7


def test_no_server_module_rounds_a_token_figure_but_the_rounding_rule() -> None:
    """``round(x)`` (to a whole number) is written once on the server: in ``hango/rounding.py``."""
    found = []
    for path in sorted((REPO_ROOT / "hango").rglob("*.py")):
        if path.parent.name == "cli" or path.name == "rounding.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round"
            if call and len(node.args) == 1:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert found == []
