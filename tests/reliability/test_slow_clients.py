"""Slow clients against the production deployment: Debian's nginx (``deploy/nginx.conf``) in front of gunicorn.

A gunicorn sync worker has no read timeout: a connection that sends its headers one
byte a second holds a worker for as long as it likes, and two of them stop a
2-worker server. Behind nginx, the workers only ever see whole requests.
"""

from __future__ import annotations

import pytest
import requests

from hango.cli.proxy import nginx_conf
from hango.config import load_config
from tests.reliability.conftest import Proxied
from tests.reliability.figures import record
from tests.support.slowloris import healthz_under_slowloris

pytestmark = pytest.mark.server

SLOW_CONNECTIONS = 4
ATTACK_SECONDS = 8.0


def test_four_slowloris_connections_leave_healthz_answering_through_nginx(proxied: Proxied) -> None:
    statuses = [
        status for status, _ in healthz_under_slowloris(proxied.nginx, SLOW_CONNECTIONS, ATTACK_SECONDS)
    ]

    assert len(statuses) >= 3, statuses
    assert statuses == [200] * len(statuses)
    record(
        "slow_clients/nginx",
        slow_connections=SLOW_CONNECTIONS,
        polls=len(statuses),
        answered=statuses.count(200),
    )


def test_the_nginx_configuration_buffers_and_times_out_slow_clients_and_caps_bodies() -> None:
    config = load_config(env={}, overrides={"max_body_bytes": 123_456})
    text = nginx_conf(config, "127.0.0.1:8000", "127.0.0.1:9000")

    for directive in (
        "proxy_request_buffering on;",
        "proxy_buffering on;",
        "client_header_timeout 10s;",
        "client_body_timeout 10s;",
        "client_max_body_size 123456;",
        "listen 127.0.0.1:8000;",
        "server 127.0.0.1:9000;",
        "proxy_set_header X-Forwarded-For $remote_addr;",
        f"proxy_read_timeout {config.worker_timeout + 10}s;",
    ):
        assert directive in text
    assert "{{" not in text


def test_a_body_over_the_limit_is_refused_by_nginx_before_gunicorn(proxied: Proxied) -> None:
    too_big = b"x" * (load_config(env={}).max_body_bytes + 1)

    answer = requests.post(f"{proxied.nginx}/v1/agents", data=too_big, timeout=30)

    assert answer.status_code == 413
    assert "nginx" in answer.text  # refused by the proxy: no worker read the body
