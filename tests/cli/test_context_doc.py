"""The output in docs/learning/context-cli.md is real: each marked block is a run of the CLI on the demo session.

The commands run in the doc's order on the session ``hango demo`` seeds (what a
user sees after ``scripts/run``), in an 80-column terminal. Ids are shown as the
shell variables the doc sets (``$S``, ``$AGENT``, ...) and timings as ``…``.
Regenerate the blocks with ``HANGO_UPDATE_GOLDEN=1`` and review the diff;
otherwise a stale block fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex

import pytest

from hango.cli import main
from hango.config import REPO_ROOT
from tests.cli.conftest import member_session

pytestmark = pytest.mark.server

DOC = REPO_ROOT / "docs" / "learning" / "context-cli.md"
BLOCK = re.compile(r"(<!-- cli:(?P<name>[\w-]+) -->\n```text\n)(?P<body>.*?)(\n```)", re.DOTALL)
UPDATE = "HANGO_UPDATE_GOLDEN"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MILLISECONDS = re.compile(r"\b\d+ ms\b")  # a step's or a call's duration


class Terminal:
    """Runs ``hango`` as a user types it, and writes down what the terminal shows."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        self.capsys, self.monkeypatch = capsys, monkeypatch
        self.names: dict[str, str] = {}  # a value → the shell variable that holds it

    def run(self, *argv: str, env: dict[str, str] | None = None, note: str = "") -> str:
        """``$ hango …`` and what it printed: stderr (written first in every command here), then stdout."""
        with self.monkeypatch.context() as patch:
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            with contextlib.suppress(SystemExit):  # argparse printed its usage and error
                main(list(argv))
        out, err = self.capsys.readouterr()
        typed = " ".join(
            [*(f"{k}={self._typed(v)}" for k, v in (env or {}).items()), "hango", *map(self._typed, argv)]
        )
        return "\n".join([f"$ {typed}{note}", *self.shown(err + out).splitlines()])

    def only_changed(self, before: str, after: str) -> str:
        """The lines of ``after`` (a command and its output) that ``before`` does not have."""
        command, *lines = after.splitlines()
        return "\n".join([command, *(line for line in lines if line not in before.splitlines())])

    def _typed(self, arg: str) -> str:
        return self.names.get(arg) or shlex.quote(arg)

    def shown(self, text: str) -> str:
        for value, name in self.names.items():
            text = text.replace(value, name)
        return MILLISECONDS.sub("… ms", UUID.sub("…", text))


def doc_blocks(terminal: Terminal, demo: dict[str, str]) -> dict[str, str]:
    """Every block of the doc, by name, from the commands run in the doc's order."""
    s = demo["session_id"]
    terminal.names.update({s: "$S", demo["agent_id"]: "$AGENT", demo["member_key"]: "$MEMBER_KEY"})

    def context(action: str, *argv: str, session: str = s, **options) -> str:
        return terminal.run("context", action, "--session", session, *argv, **options)

    changed = "        # the lines that changed"
    blocks = {"show": context("show"), "show-top": context("show", "--sort", "tokens", "--top", "5")}
    before = context("show", "--all")
    excluded = context("exclude", "message:6", "system:todo")
    blocks["exclude"] = (
        f"{excluded}\n\n{terminal.only_changed(before, context('show', '--all', note=changed))}"
    )
    blocks["include"] = context("include", "message:7", "system:todo")
    blocks["refused"] = "\n\n".join(
        [context("exclude", "message:1..5", "message:9..22"), context("exclude", "message:2", "tool:nope")]
    )
    blocks["try"] = context(
        "try", "--exclude", "message:13..16", "--replace", "message:21=Thanks. What is still open?"
    )
    blocks["suggest"] = context("suggest")
    blocks["suggest-apply"] = context("suggest", "--apply", "1")
    before = context("show")
    compacted = context("compact", "--instructions", "Keep the file names and the open todos.")
    blocks["compact"] = f"{compacted}\n\n{terminal.only_changed(before, context('show', note=changed))}"
    mine = member_session(demo)  # last: until here the agent's sets apply to one session
    terminal.names[mine] = "$MINE"
    blocks["errors"] = "\n\n".join(
        [
            context("show", session="planning"),
            context("show", env={"HANGO_API_URL": "127.0.0.1:8080"}),
            context("show", "--full", "message:99"),
            context("exclude", "system:todo", session=mine, env={"HANGO_API_KEY": demo["member_key"]}),
        ]
    )
    return blocks


def test_the_cli_learning_doc_shows_real_output(capsys, monkeypatch, demo_session):
    monkeypatch.setenv("COLUMNS", "80")
    generated = doc_blocks(Terminal(capsys, monkeypatch), demo_session)
    doc = DOC.read_text(encoding="utf-8")
    if os.environ.get(UPDATE) == "1":
        doc = BLOCK.sub(lambda m: m[1] + generated.get(m["name"], m["body"]) + m[4], doc)
        DOC.write_text(doc, encoding="utf-8")
    shown = {m["name"]: m["body"] for m in BLOCK.finditer(doc)}
    assert sorted(shown) == sorted(generated), "the doc's <!-- cli:NAME --> blocks and the commands differ"
    stale = [name for name in generated if shown[name] != generated[name]]
    assert stale == [], f"these blocks went stale: rerun with {UPDATE}=1 and review the diff"
