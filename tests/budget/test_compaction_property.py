"""Compaction as a property: every cut the summarizer makes is valid, and the result fits the window.

The middleware runs on random drafts (system blocks, tools the agent may not
enable, a history of turns with tool pairs, several results in one message and
text beside results, maybe an earlier summary), followed by the tool allowlist
as in the stack. Its compactor is an in-memory double that records what it is
asked; the draft reaching ``call_next`` is what the model would receive.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from hango.agent.chain import Chain, summary_message
from hango.agent.compaction import compact_at, render
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_message, estimate_messages, estimate_request
from hango.agent.middleware.summarization import SummarizationMiddleware
from hango.agent.middleware.tool_allowlist import ToolAllowlistMiddleware
from hango.agent.parts import SUMMARY, SourcedBlock, SourcedMessage, message_part, seq_of, system_part
from hango.agent.report import SUMMARIZED, LeftOut, Report
from hango.agent.state import INSPECT, AgentConfig, Caller, RunHandles, RunState, Summary
from hango.agent.validate import safe_cut_points, validate_history
from hango.messages import (
    Block,
    ContentBlock,
    Message,
    Response,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)

ANSWER = Response(Message("assistant", (TextBlock("ok"),)), "end_turn")


@dataclass
class MemoryCompactor:
    """A summarizer double: answers ``summary`` and keeps what it was given and asked to save."""

    summary: str
    transcripts: list[str] = field(default_factory=list)
    saved: list[tuple[int, str]] = field(default_factory=list)

    def summarize(self, state: RunState, transcript: str) -> str:
        self.transcripts.append(transcript)
        return self.summary

    def save(self, state: RunState, through_seq: int, text: str) -> None:
        self.saved.append((through_seq, text))


def words(n: int, word: str = "lorem") -> str:
    return " ".join([word] * n)


texts = st.integers(1, 120).map(words)


def said(role: str, *content: ContentBlock) -> Message:
    return Message(role, content)  # type: ignore[arg-type]


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Turns of a user text, tool rounds (1-3 calls, results in any order, text beside them), answers.

    It ends on a user message, as every history does when the model is called.
    """
    ids = (f"toolu_{n}" for n in itertools.count())
    history: list[Message] = []
    for _ in range(draw(st.integers(1, 8))):
        history.append(said("user", *(TextBlock(t) for t in draw(st.lists(texts, min_size=1, max_size=2)))))
        for _ in range(draw(st.integers(0, 3))):
            asked = [next(ids) for _ in range(draw(st.integers(1, 3)))]
            preface = [TextBlock(draw(texts))] if draw(st.booleans()) else []
            calls = [ToolUseBlock(i, "read_file", {"path": draw(texts)}) for i in asked]
            history.append(said("assistant", *preface, *calls))
            results: list[ContentBlock] = [
                ToolResultBlock(i, draw(texts)) for i in draw(st.permutations(asked))
            ]
            if draw(st.booleans()):
                results.insert(draw(st.integers(0, len(results))), TextBlock(draw(texts)))
            history.append(said("user", *results))
        if draw(st.booleans()):
            history.append(said("assistant", TextBlock(draw(texts))))
    if history[-1].role == "assistant":
        history.pop()
    return history


@dataclass(frozen=True)
class Case:
    draft: Draft
    state: RunState
    compactor: MemoryCompactor

    @property
    def stored(self) -> list[SourcedMessage]:
        return [m for m in self.draft.messages if m.part != SUMMARY]

    @property
    def sendable(self) -> Draft:
        """The draft with only the agent's tools: what reaches the model when nothing is compacted."""
        return self.draft.with_(tools=tuple(t for t in self.draft.tools if t.name in self.state.agent.tools))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    window = draw(st.integers(1024, 6000))
    tools = tuple(
        ToolDef(f"tool_{i}", words(n, "does"), {})
        for i, n in enumerate(draw(st.lists(st.integers(1, 300), max_size=4)))
    )
    enabled = tuple(draw(st.sets(st.sampled_from([t.name for t in tools]))) if tools else ())
    agent = AgentConfig(uuid.uuid4(), uuid.uuid4(), "a", "offline/echo", "", enabled, {}, window)
    earlier = draw(st.one_of(st.none(), st.integers(1, 40)))
    compactor = MemoryCompactor(draw(st.integers(1, 1500).map(lambda n: words(n, "gist"))))
    state = RunState(
        uuid.uuid4(), uuid.uuid4(), agent, Caller(None, None), handles=RunHandles(compactor=compactor)
    )
    state.compact_trigger = draw(st.sampled_from([0.5, 0.8, 0.95]))
    first = 1 if earlier is None else earlier + 1
    messages = [SourcedMessage(message_part(first + i), m) for i, m in enumerate(draw(histories()))]
    if earlier is not None:
        state.summary = Summary(earlier, "the story so far")
        messages.insert(0, summary_message(state.summary.text))
    system = tuple(
        SourcedBlock(system_part(f"part_{i}"), Block(words(n, "rule")))
        for i, n in enumerate(draw(st.lists(st.integers(1, 300), max_size=3)))
    )
    return Case(Draft("offline/echo", system, tools, tuple(messages)), state, compactor)


def run(case: Case) -> Draft:
    """What the model receives from summarization and, innermost as in the stack, the tool allowlist."""
    sent: list[Draft] = []

    def call_next(draft: Draft) -> Response:
        sent.append(draft)
        return ANSWER

    chain = Chain([SummarizationMiddleware(), ToolAllowlistMiddleware()])
    assert chain.call_model(case.draft, case.state, call_next) is ANSWER
    assert len(sent) == 1
    return sent[0]


def fitting_cut_exists(case: Case) -> bool:
    """Whether some safe cut fits the window even with an empty summary."""
    stored = case.stored
    fixed = estimate_request(case.sendable.with_(messages=()).to_request()) + estimate_message(
        summary_message("").message
    )
    sizes = [estimate_message(m.message) for m in stored]
    budget = compact_at(case.state)
    return any(
        fixed + sum(sizes[k:]) <= budget for k in safe_cut_points([m.message for m in stored]) if k > 0
    )


@settings(max_examples=300, deadline=None)
@given(cases())
def test_every_cut_is_valid_and_the_compacted_request_fits_the_window(case: Case) -> None:
    budget = compact_at(case.state)
    sent = run(case)
    messages = [m.message for m in sent.messages]

    assert validate_history(messages) == []
    if estimate_request(case.sendable.to_request()) <= budget:
        assert sent == case.sendable
        assert case.compactor.transcripts == []
        assert sent.report == Report()
        return
    if not case.compactor.saved:
        assert not any(k > 0 for k in safe_cut_points([m.message for m in case.stored]))
        assert sent == case.sendable and sent.report.compacted is None
        return
    [(through, text)] = case.compactor.saved
    assert case.compactor.summary.startswith(text), "the summary is the answer, cut to fit at most"
    assert case.state.summary == Summary(through, text)
    summarized = [m for m in case.draft.messages if m.part == SUMMARY or seq_of(m.part) <= through]
    assert sent.report.compacted.through_seq == through and not sent.report.would_compact
    assert sent.report.left_out == (
        LeftOut(
            "summarization",
            SUMMARIZED,
            tuple(m.part for m in summarized),
            estimate_messages(m.message for m in summarized),
        ),
    )
    assert sent.messages[0] == summary_message(text)
    assert [m.part for m in sent.messages[1:]] == [m.part for m in case.stored if seq_of(m.part) > through]
    assert sent.system == case.sendable.system and sent.tools == case.sendable.tools
    if fitting_cut_exists(case):
        assert estimate_request(sent.to_request()) <= budget


@settings(max_examples=100, deadline=None)
@given(cases())
def test_the_summarizer_reads_exactly_the_messages_it_replaces(case: Case) -> None:
    sent = run(case)
    if not case.compactor.saved:
        return
    [transcript] = case.compactor.transcripts
    [(through, _)] = case.compactor.saved
    replaced = [m for m in case.stored if seq_of(m.part) <= through]
    assert replaced, "a cut replaces at least one message"
    earlier = "Earlier summary:\nthe story so far\n\n" if case.draft.messages[0].part == SUMMARY else ""
    assert transcript == earlier + render(replaced)
    kept_first = sent.messages[1].message
    assert kept_first.role == "user" and all(isinstance(b, TextBlock) for b in kept_first.content)


@settings(max_examples=50, deadline=None)
@given(cases())
def test_an_inspect_reports_would_compact_and_calls_nothing(case: Case) -> None:
    case.state.mode = INSPECT
    over = estimate_request(case.sendable.to_request()) > compact_at(case.state)

    sent = run(case)

    assert sent == case.sendable
    assert sent.report == Report(would_compact=over)
    assert case.compactor.transcripts == [] and case.compactor.saved == []
