"""What a new user reads after the README's two commands: the next step, and the CLI's hint without a key."""

from __future__ import annotations

import re

import pytest

from hango.cli.client import UsageError, from_env
from hango.config import REPO_ROOT


def test_the_readme_states_no_package_count_and_says_in_one_line_what_to_do_next():
    readme = (REPO_ROOT / "README.md").read_text()
    intro = readme.split("## What hango is")[0]

    assert not re.search(r"installing \d+ pinned packages", readme)  # set-up prints the count itself
    [step] = [p for p in intro.split("\n\n") if p.startswith("Next:")]
    assert "/admin" in step and "owner key" in step
    assert "HANGO_API_URL" in step and "HANGO_API_KEY" in step
    assert ".venv/bin/hango context show --session" in step


def test_the_clis_hint_without_a_key_names_the_env_vars_not_bootstrap(monkeypatch):
    monkeypatch.delenv("HANGO_API_KEY", raising=False)

    with pytest.raises(UsageError) as refused:
        from_env()

    assert "HANGO_API_URL" in str(refused.value) and "HANGO_API_KEY" in str(refused.value)
    assert "bootstrap" not in str(refused.value)
