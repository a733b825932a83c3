"""Debian's nginx running ``deploy/nginx.conf`` from a temporary prefix, in front of a live server."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from hango.cli.proxy import nginx_conf
from hango.config import load_config
from tests.support.net import free_port, wait_until
from tests.support.server import stop

NGINX = Path("/usr/sbin/nginx")
START_TIMEOUT = 15.0


@contextmanager
def nginx_proxy(*upstream_urls: str) -> Iterator[str]:
    """nginx on a free loopback port proxying to ``upstream_urls`` until the block ends; yields its URL.

    Unprivileged-friendly: the pid file, logs and temp files are under a temporary prefix.
    """
    port = free_port()
    upstream = ",".join(url.removeprefix("http://") for url in upstream_urls)
    with tempfile.TemporaryDirectory(prefix="hango-nginx-") as prefix:
        root = Path(prefix)
        root.chmod(0o755)  # run as root, nginx's workers are `nobody` and must reach their temp files
        (root / "temp").mkdir(mode=0o777)
        conf = root / "nginx.conf"
        conf.write_text(nginx_conf(load_config(), f"127.0.0.1:{port}", upstream))
        argv = [
            str(NGINX),
            "-p",
            f"{root}/",
            "-c",
            str(conf),
            "-e",
            str(root / "error.log"),
            "-g",
            "daemon off;",
        ]
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            try:
                wait_until(lambda: server.poll() is None and _healthy(url), timeout=START_TIMEOUT)
            except TimeoutError as exc:
                log = (root / "error.log").read_text() if (root / "error.log").exists() else ""
                raise RuntimeError(f"nginx did not start:\n{log[-2000:]}") from exc
            yield url
        finally:
            stop(server)


def _healthy(url: str) -> bool:
    return requests.get(f"{url}/healthz", timeout=2).status_code == 200
