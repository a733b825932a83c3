"""The README's run command, from a clean clone, as a new user would run it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from hango.config import REPO_ROOT
from tests.support.net import free_port, wait_until


def _readme_run_command() -> str:
    """The first command in the README's first shell block."""
    readme = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"```(?:sh|bash)\n(.*?)```", readme, re.S).group(1)
    return block.strip().splitlines()[0].split("#")[0].strip()


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pgdata" / "postmaster.pid").read_text().split()[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") == -1


@pytest.mark.server
def test_run_command_from_a_clean_clone_serves_and_stops_cleanly():
    workdir = Path(tempfile.mkdtemp(prefix="hango-clone-", dir="/tmp"))
    workdir.chmod(0o755)
    clone = workdir / "hango"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    port = free_port()
    env = {**os.environ, "HANGO_PORT": str(port), "PYTHON": shutil.which("python3")}
    # A new user's shell: no database or data folder of ours, and no PYTHONPATH, which would make
    # the clone's commands import another tree's hango (and use that tree's ./.hango).
    for name in ("HANGO_DATABASE_URL", "HANGO_DATA_DIR", "PYTHONPATH"):
        env.pop(name, None)
    started = time.monotonic()
    proc = subprocess.Popen(
        _readme_run_command(),
        shell=True,
        cwd=clone,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200, 600)
        print(f"cold start of the run command: {time.monotonic() - started:.1f} s")
        postmaster = _postmaster_pid(clone / ".hango")
        assert _alive(postmaster)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        output = proc.communicate(timeout=60)[0]
    assert re.search(rf"URL:\s+http://127\.0\.0\.1:{port}", output), output
    assert re.search(r"owner key:\s+hgo_\w+", output), output
    assert not _alive(postmaster), "the embedded PostgreSQL outlived the run command"
    assert not (clone / ".hango" / "pgdata" / "postmaster.pid").exists()
    shutil.rmtree(workdir, ignore_errors=True)
