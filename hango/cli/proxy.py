"""``hango nginx-conf``: the reverse proxy that production puts in front of gunicorn (``deploy/nginx.conf``)."""

from __future__ import annotations

import argparse
import sys

from hango.cli.common import config_or_exit
from hango.config import REPO_ROOT, Config

TEMPLATE = REPO_ROOT / "deploy" / "nginx.conf"


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "nginx-conf", help="print the nginx configuration for a production deployment"
    )
    parser.add_argument("--listen", default="0.0.0.0:80", help="nginx's listen address (default 0.0.0.0:80)")
    parser.add_argument(
        "--upstream",
        default="127.0.0.1:8080",
        help="where `hango serve` listens (several web nodes: comma-separated)",
    )
    parser.set_defaults(handler=run)


def nginx_conf(config: Config, listen: str, upstream: str) -> str:
    """``deploy/nginx.conf`` for ``listen`` → ``upstream``, its body limit and read timeout from ``config``.

    ``upstream`` names one web node, or several separated by commas (nginx spreads requests over them).
    """
    nodes = [node.strip() for node in upstream.split(",") if node.strip()]
    values = {
        "listen": listen,
        "upstream": ";\n        server ".join(nodes),
        "max_body_bytes": str(config.max_body_bytes),
        "read_timeout": str(config.worker_timeout + 10),
    }
    text = TEMPLATE.read_text()
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    return text


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(nginx_conf(config_or_exit(), args.listen, args.upstream))
    return 0
