"""``hango admin bootstrap``: the first tenant, owner and key, straight in the database."""

from __future__ import annotations

import argparse
import json

from hango.auth import generate_key
from hango.cli.common import config_or_exit, migrated_engine
from hango.store import TenantStore
from hango.store.tenants import ensure_membership, ensure_tenant, ensure_user


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("admin", help="operator commands that talk to the database directly")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    boot = actions.add_parser(
        "bootstrap", help="create (or reuse) a tenant and user, and print a new API key"
    )
    boot.add_argument("--tenant", required=True, help="tenant name")
    boot.add_argument("--email", required=True, help="the user's email")
    boot.add_argument("--role", choices=("owner", "admin", "member"), default="owner")
    boot.add_argument("--rate-limit", type=int, default=None, help="requests per minute for the new key")
    boot.add_argument("--json", action="store_true", help="print a JSON object")
    boot.set_defaults(handler=bootstrap)


def bootstrap(args: argparse.Namespace) -> int:
    config = config_or_exit()
    with migrated_engine(config) as engine, engine.begin() as conn:
        result = create_principal(
            conn, args.tenant, args.email, args.role, args.rate_limit or config.default_rate_limit
        )
    if args.json:
        print(json.dumps(result))
    else:
        print(f"tenant {result['tenant_slug']} ({result['tenant_id']}), {args.role} {args.email}")
        print(f"API key (shown once): {result['api_key']}")
    return 0


def create_principal(
    conn, tenant: str, email: str, role: str, rate_limit: int, *, key_name: str = "bootstrap"
) -> dict:
    """Ensure tenant, user and membership exist, and create a key named ``key_name`` for them."""
    tenant_row = ensure_tenant(conn, tenant)
    user = ensure_user(conn, email)
    ensure_membership(conn, tenant_row.id, user.id, role)
    key = generate_key()
    store = TenantStore(conn, tenant_row.id)
    row = store.api_keys.create(user.id, key_name, key, rate_limit)
    store.audit.record(
        "tenant.bootstrap",
        "api_key",
        row.id,
        actor_user_id=user.id,
        api_key_id=None,
        detail={"role": role, "prefix": key.prefix},
    )
    return {
        "tenant_id": str(tenant_row.id),
        "tenant_slug": tenant_row.slug,
        "user_id": str(user.id),
        "role": role,
        "api_key_id": str(row.id),
        "api_key": key.secret,
    }
