"""Linear-time patterns for ``grep`` and ``glob`` (RE2), and grep's bounded scan of file contents.

RE2 never backtracks, so no pattern can take exponential time; a search still costs
up to about (program size × characters) steps when its DFA gives up. Both factors
are bounded: a pattern compiles to at most ``MAX_PROGRAM_SIZE`` instructions, and
each line is searched in at most ``SEARCH_BUDGET // program size`` characters (all of
a 1 MB line for a simple pattern). The scan checks the run's deadline on every line
and stops after ``MAX_GREP_CHARS`` characters of files or enough matches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import re2

from hango.agent.state import RunState
from hango.agent.tools.base import ToolFailure

MAX_PROGRAM_SIZE = 5_000
SEARCH_BUDGET = 2**25  # program instructions × characters for the search of one line
MAX_GREP_CHARS = 50_000_000
MAX_LINE_CHARS = 2000
SYNTAX = "RE2 syntax (github.com/google/re2/wiki/Syntax: no backreferences or look-around)"


def _options() -> re2.Options:
    options = re2.Options()
    options.never_capture = True  # the tools ask only whether and where a pattern matches
    options.log_errors = False
    return options


def compile_pattern(pattern: str, what: str = "regular expression") -> re2._Regexp:
    """``pattern`` compiled by RE2; ``ToolFailure`` when RE2 refuses it or it is too large."""
    try:
        regex = re2.compile(pattern, _options())
    except re2.error as exc:
        raise ToolFailure(f"invalid {what} {pattern!r} for {SYNTAX}: {exc}") from exc
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise ToolFailure(
            f"the {what} {pattern!r} is too complex ({regex.programsize} RE2 instructions, "
            f"at most {MAX_PROGRAM_SIZE}); simplify it"
        )
    return regex


@dataclass
class Scan:
    """grep's walk over files: the matches so far, and why it stopped early if it did."""

    regex: re2._Regexp
    state: RunState
    max_matches: int
    matches: list[str] = field(default_factory=list)
    chars: int = 0
    cut_lines: int = 0

    @property
    def line_limit(self) -> int:
        return SEARCH_BUDGET // max(1, self.regex.programsize)

    def search(self, path: str, content: str) -> bool:
        """Add the file's matching lines; True when the scan has enough matches or read enough."""
        limit = self.line_limit
        for n, line in enumerate(content.splitlines(), 1):
            self.state.check_deadline()
            searched = line[:limit]
            self.cut_lines += len(searched) < len(line)
            if self.regex.search(searched):
                self.matches.append(f"{path}:{n}: {cut(line, MAX_LINE_CHARS)}")
                if len(self.matches) > self.max_matches:
                    return True
        self.chars += len(content)
        return self.chars >= MAX_GREP_CHARS

    def notes(self) -> list[str]:
        """What the answer must say it left out."""
        notes = []
        if len(self.matches) > self.max_matches:
            notes.append(f"(only the first {self.max_matches} matches are shown; narrow the search)")
        elif self.chars >= MAX_GREP_CHARS:
            notes.append(
                f"(the search stopped after {self.chars} characters of files, its limit; "
                "narrow it with path or glob)"
            )
        if self.cut_lines:
            notes.append(
                f"({self.cut_lines} long lines were searched in their first {self.line_limit} characters)"
            )
        return notes


def cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + " [line cut]"
