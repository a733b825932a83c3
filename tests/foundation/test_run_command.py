"""The README's run command, from a clean clone, as a new user would run it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from hango.config import REPO_ROOT
from tests.support.mcp import TIME_TOOLS
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


# What a first run says, in order, one line a step, before the URL and the keys.
FIRST_RUN_STEPS = (
    r"setup: creating the virtualenv \./\.venv",
    r"setup: installing \d+ pinned packages and their dependencies from requirements\.txt",
    r"setup: installing Alpine\.js",
    r"run: starting the embedded PostgreSQL",
    r"run: making the server key that seals stored secrets",
    r"run: writing the MCP server catalog \(the reference time server\)",
    r"run: migrating the database",
    r"run: seeding the demo tenant",
)
# All a second run prints: the demo's URL, keys and ids, and where hango runs.
SECOND_RUN_LINES = (
    r"demo tenant is ready",
    r"  URL: +http://127\.0\.0\.1:\d+",
    r"  owner key: +hgo_[\w-]+",
    r"  member key: +hgo_[\w-]+",
    r"  agent: +[0-9a-f-]{36}",
    r"  session: +[0-9a-f-]{36}",
    r"hango is running at http://127\.0\.0\.1:\d+ \(Ctrl-C stops it\)",
)


def _run_until_ready(
    clone: Path, port: int, while_serving: Callable[[str, str], None] = lambda url, said: None
) -> tuple[str, int]:
    """Run the README's command in ``clone`` until it serves, call ``while_serving`` with its URL and what it
    said so far, stop it with Ctrl-C; its output and PostgreSQL's pid."""
    env = {**os.environ, "HANGO_PORT": str(port), "PYTHON": shutil.which("python3")}
    # A new user's shell: no database or data folder of ours, no gunicorn options, and no PYTHONPATH,
    # which would make the clone's commands import another tree's hango (and use that tree's ./.hango).
    for name in (
        "HANGO_DATABASE_URL",
        "HANGO_DATA_DIR",
        "HANGO_MCP_CATALOG",
        "GUNICORN_CMD_ARGS",
        "PYTHONPATH",
    ):
        env.pop(name, None)
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
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    postmaster = 0
    try:
        wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200, 600)
        postmaster = _postmaster_pid(clone / ".hango")
        assert _alive(postmaster)
        while_serving(f"http://127.0.0.1:{port}", "".join(lines))
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=60)
        proc.stdout.close()
    return "".join(lines), postmaster


@pytest.mark.server
def test_run_command_from_a_clean_clone_serves_and_stops_cleanly_with_the_demos_time_mcp_server():
    workdir = Path(tempfile.mkdtemp(prefix="hango-clone-", dir="/tmp"))
    workdir.chmod(0o755)
    clone = workdir / "hango"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    port = free_port()
    started = time.monotonic()
    read: list[dict] = []
    output, postmaster = _run_until_ready(
        clone, port, lambda *served: read.append(_demo_as_its_owner(*served))
    )
    print(f"cold start of the run command: {time.monotonic() - started:.1f} s")
    assert re.search(rf"URL:\s+http://127\.0\.0\.1:{port}", output), output
    assert re.search(r"owner key:\s+hgo_\w+", output), output
    assert not _alive(postmaster), "the embedded PostgreSQL outlived the run command"
    assert not (clone / ".hango" / "pgdata" / "postmaster.pid").exists()
    _the_first_run_says_its_steps_and_a_second_run_only_the_url_and_keys(clone, output, read)
    _the_demo_has_the_time_mcp_server_once_and_the_first_inspect_shows_its_group(*read)
    shutil.rmtree(workdir, ignore_errors=True)


def _demo_as_its_owner(url: str, said: str) -> dict:
    """The demo session's inspect answer and the tenant's MCP servers, read with the owner key the run printed."""
    key = re.search(r"owner key:\s+(hgo_[\w-]+)", said).group(1)
    session = re.search(r"session:\s+([0-9a-f-]{36})", said).group(1)
    read = {}
    for name, path in (("inspect", f"/v1/sessions/{session}/context"), ("servers", "/v1/mcp-servers")):
        answer = requests.get(f"{url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert answer.status_code == 200, answer.text
        read[name] = answer.json()
    return read


def _the_demo_has_the_time_mcp_server_once_and_the_first_inspect_shows_its_group(
    first: dict, second: dict
) -> None:
    """Part of the clean-clone test: ``scripts/run`` ships the catalog's time server into the demo, once,
    its tools deferred (``tool_search`` reveals them) and the built-ins sent."""
    groups = {group["server"]: group for group in first["inspect"]["tool_groups"]}
    assert list(groups) == [None, "time"], first["inspect"]["tool_groups"]
    assert (groups["time"]["sent"], groups["time"]["deferred"]) == (0, len(TIME_TOOLS))
    assert groups[None]["sent"] > 0 and groups[None]["deferred"] == 0
    for read in (first, second):
        assert [(s["name"], s["catalog"]) for s in read["servers"]["items"]] == [("time", "time")]


def _the_first_run_says_its_steps_and_a_second_run_only_the_url_and_keys(
    clone: Path, first: str, read: list[dict]
) -> None:
    """Part of the clean-clone test: the install it did once is what makes a second run cheap."""
    steps = [line for line in first.splitlines() if line.startswith(("setup: ", "run: "))]
    assert len(steps) == len(FIRST_RUN_STEPS), first
    for line, expected in zip(steps, FIRST_RUN_STEPS, strict=True):
        assert re.match(expected, line), (line, expected)
    assert first.index(steps[-1]) < first.index("demo tenant is ready"), first

    second, _ = _run_until_ready(clone, free_port(), lambda *served: read.append(_demo_as_its_owner(*served)))

    # What a person reads while it runs: up to the "running at" line (a request the test's own
    # readiness poll had in flight when Ctrl-C came may be logged after it, as gunicorn stops).
    lines = [line for line in second.splitlines() if line.strip()]
    running = next((i for i, line in enumerate(lines) if line.startswith("hango is running at ")), len(lines))
    lines = lines[: running + 1]
    assert len(lines) == len(SECOND_RUN_LINES), second
    for line, expected in zip(lines, SECOND_RUN_LINES, strict=True):
        assert re.fullmatch(expected, line), (line, expected)
