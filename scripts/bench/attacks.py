"""The attacks of docs/reliability.md's hardening rows, measured on a real deployment of a source tree.

Run from the repository root::

    .venv/bin/python -m scripts.bench.attacks                  # this checkout
    git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python -m scripts.bench.attacks --tree /tmp/before   # an older one, for the "before" column

It starts ``hango serve`` (2 sync workers) of the tree on a fresh embedded PostgreSQL, and
Debian's nginx with ``deploy/nginx.conf`` in front of it, all on loopback; then it
runs each attack once, bounded in count and time, and prints one line per figure.
"""

from __future__ import annotations

import argparse
import secrets
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from hango.config import REPO_ROOT
from hango.db import make_engine
from scripts.bench.hango_server import Hango, database, serving
from tests.support.minutes import wait_for_fresh_minute
from tests.support.nginx import nginx_proxy
from tests.support.slowloris import healthz_under_slowloris

SLOW_CONNECTIONS = 4
SLOW_SECONDS = 20.0
KEYS, KEY_LIMIT = 8, 20
WRONG_SECRETS = 300


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Connection": "close"}


def slow_clients(url: str) -> str:
    polls = healthz_under_slowloris(url, SLOW_CONNECTIONS, SLOW_SECONDS)
    answered = [seconds for status, seconds in polls if status == 200]
    slowest = max((seconds for _, seconds in polls), default=0.0)
    return f"{len(answered)}/{len(polls)} polls answered, slowest {slowest:.2f} s"


def member_keys(hango: Hango) -> str:
    owner = _bearer(hango.principal["api_key"])
    keys = []
    for _ in range(KEYS):
        body = {"name": "extra", "rate_limit_per_minute": KEY_LIMIT}
        keys.append(
            requests.post(f"{hango.url}/v1/api-keys", json=body, headers=owner, timeout=30).json()["api_key"]
        )
    engine = make_engine(hango.database_url)
    wait_for_fresh_minute(engine, 20)
    engine.dispose()
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(
                lambda key: requests.get(f"{hango.url}/v1/me", headers=_bearer(key), timeout=30),
                keys * KEY_LIMIT,
            )
        )
    ok = sum(a.status_code == 200 for a in answers)
    return f"{ok} of {KEYS * KEY_LIMIT} answered with {KEYS} keys of {KEY_LIMIT}/min"


def wrong_secrets(url: str) -> str:
    def attempt(_: int) -> int:
        key = f"hgo_{secrets.token_hex(6)}_{secrets.token_urlsafe(24)}"
        return requests.get(f"{url}/v1/me", headers=_bearer(key), timeout=30).status_code

    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(attempt, range(WRONG_SECRETS)))
    return f"{statuses.count(401)} x 401, {statuses.count(429)} x 429"


def forged_host(url: str) -> str:
    answer = requests.get(f"{url}/admin", headers={"Host": "evil.example"}, allow_redirects=False, timeout=30)
    return f"{answer.status_code} Location: {answer.headers.get('Location')}"


def path_text(hango: Hango) -> str:
    owner = _bearer(hango.principal["api_key"])
    agent = requests.post(
        f"{hango.url}/v1/agents", json={"name": "p", "model": "offline/echo"}, headers=owner, timeout=30
    )
    memory = f"{hango.url}/v1/agents/{agent.json()['id']}/memory"
    for form in ("NFC", "NFD"):
        requests.put(
            f"{memory}/{unicodedata.normalize(form, 'café.md')}",
            json={"content": form},
            headers=owner,
            timeout=30,
        )
    files = len(requests.get(memory, headers=owner, timeout=30).json()["items"])
    hidden = requests.put(
        f"{memory}/a\u200bb.md", json={"content": "x"}, headers=owner, timeout=30
    ).status_code
    return f"composed + decomposed café.md: {files} file(s); U+200B path: {hidden}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO_ROOT, help="the source tree to serve")
    args = parser.parse_args()
    env = {"HANGO_TRUSTED_PROXIES": "127.0.0.1"}
    with (
        database(100_000, args.tree) as (data_dir, url, principal),
        serving(data_dir, url, principal, 2, tree=args.tree, env=env) as hango,
        nginx_proxy(hango.url) as proxy,
    ):
        print(f"tree: {args.tree}")
        print(f"slow clients, direct:      {slow_clients(hango.url)}")
        print(f"slow clients, nginx:       {slow_clients(proxy)}")
        print(f"member keys:               {member_keys(hango)}")
        print(f"wrong secrets:             {wrong_secrets(hango.url)}")
        print(f"forged Host:               {forged_host(hango.url)}")
        print(f"path text:                 {path_text(hango)}")


if __name__ == "__main__":
    main()
