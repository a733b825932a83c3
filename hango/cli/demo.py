"""``hango demo``: seed (idempotently) a demo tenant and print fresh keys for it."""

from __future__ import annotations

import argparse
import json
import os

from hango.cli.admin import create_principal
from hango.cli.common import config_or_exit
from hango.db import attached_database, make_engine, migrate

DEMO_TENANT = "Demo"
OWNER_EMAIL = "owner@demo.hango.dev"
MEMBER_EMAIL = "member@demo.hango.dev"


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("demo", help="seed a demo tenant and print its keys")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config = config_or_exit()
    with attached_database(config) as url:
        engine = make_engine(url)
        migrate.check_current(engine)
        with engine.begin() as conn:
            owner = create_principal(conn, DEMO_TENANT, OWNER_EMAIL, "owner", config.default_rate_limit)
            member = create_principal(conn, DEMO_TENANT, MEMBER_EMAIL, "member", config.default_rate_limit)
        engine.dispose()
    result = {"tenant_id": owner["tenant_id"], "owner_key": owner["api_key"], "member_key": member["api_key"]}
    if args.json:
        print(json.dumps(result))
        return 0
    port = os.environ.get("HANGO_PORT", "8080")
    print(f"demo tenant {owner['tenant_slug']} is ready")
    print(f"  URL:        http://127.0.0.1:{port}")
    print(f"  owner key:  {result['owner_key']}")
    print(f"  member key: {result['member_key']}")
    return 0
