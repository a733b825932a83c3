"""Tests never inherit real provider keys or base URLs from the shell."""

from __future__ import annotations

import os
import subprocess
import sys

from hango.config import REPO_ROOT, load_config
from tests.support.provider_env import PROVIDER_ENV, without_provider_env

REAL = {name: "https://real.example" if "URL" in name else "sk-real-key" for name in PROVIDER_ENV}


def test_tests_never_inherit_real_provider_keys() -> None:
    assert [name for name in PROVIDER_ENV if name in os.environ] == []
    config = load_config()
    assert (config.anthropic_api_key, config.openai_api_key) == (None, None)
    assert (config.anthropic_base_url, config.openai_base_url) == (None, None)


def test_a_shell_with_real_keys_reaches_no_test_or_server(tmp_path) -> None:
    """A pytest run started from a shell holding real keys sees none of them, nor do its servers."""
    probe = tmp_path / "test_probe_provider_env.py"
    probe.write_text(
        "import os\n"
        "from tests.support.provider_env import PROVIDER_ENV\n"
        "def test_probe():\n"
        "    assert [n for n in PROVIDER_ENV if n in os.environ] == []\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest", str(probe)],
        cwd=REPO_ROOT,
        env={**os.environ, **REAL},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]

    assert without_provider_env({**REAL, "HANGO_RUN_TIMEOUT": "5"}) == {"HANGO_RUN_TIMEOUT": "5"}
