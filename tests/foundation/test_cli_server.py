"""Server-side commands: migrations, the schema gate, bootstrap."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from hango.app import create_app
from hango.cli import build_parser, main
from hango.cli.serve import gunicorn_argv
from hango.db import migrate
from hango.db.schema import api_keys, tenants, users


def test_db_upgrade_and_downgrade_through_the_cli(fresh_url, monkeypatch, capsys):
    monkeypatch.setenv("HANGO_DATABASE_URL", fresh_url)
    assert main(["db", "upgrade"]) == 0
    assert f"database at migration {migrate.head_revision()}" in capsys.readouterr().out
    assert main(["db", "downgrade", "base"]) == 0
    assert "database at migration base" in capsys.readouterr().out
    engine = sa.create_engine(fresh_url)
    assert sa.inspect(engine).get_table_names() == ["alembic_version"]
    engine.dispose()


def test_serve_refuses_an_unmigrated_database(fresh_url, monkeypatch, capsys):
    monkeypatch.setenv("HANGO_DATABASE_URL", fresh_url)
    assert main(["serve", "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert "run `hango db upgrade`" in err
    assert len(err.strip().splitlines()) == 1


def test_the_app_refuses_an_unmigrated_database(fresh_url):
    with pytest.raises(migrate.SchemaNotCurrent, match="hango db upgrade"):
        create_app({"database_url": fresh_url})


def test_readyz_is_503_on_an_unmigrated_database(fresh_url):
    client = create_app({"database_url": fresh_url, "check_schema": False}).test_client()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "schema_not_current"
    assert client.get("/healthz").status_code == 200


def test_readyz_is_200_when_current(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ready", "migration": migrate.head_revision()}


def test_readyz_is_503_when_the_database_is_unreachable(make_app):
    app = make_app(database_url="postgresql+psycopg2://postgres@127.0.0.1:1/hango", check_schema=False)
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "database_unavailable"


def test_bootstrap_prints_a_working_key_and_reuses_tenant_and_user(
    app, database_url, engine, monkeypatch, capsys
):
    monkeypatch.setenv("HANGO_DATABASE_URL", database_url)
    argv = ["admin", "bootstrap", "--tenant", "Initech", "--email", "Boss@Initech.test", "--json"]
    keys = []
    for _ in range(2):
        assert main(argv) == 0
        keys.append(json.loads(capsys.readouterr().out)["api_key"])
    client = app.test_client()
    for key in keys:
        me = client.get("/v1/me", headers={"Authorization": f"Bearer {key}"}).get_json()
        assert (me["tenant_slug"], me["email"], me["role"]) == ("initech", "boss@initech.test", "owner")
    with engine.connect() as conn:
        counts = [
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
            for t in (tenants, users, api_keys)
        ]
    assert counts == [1, 1, 2]


def test_bootstrap_rejects_an_unknown_role(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["admin", "bootstrap", "--tenant", "x", "--email", "a@b.c", "--role", "god"])
    assert exit_.value.code == 2


def test_serve_binds_loopback_only_by_default(monkeypatch):
    monkeypatch.delenv("HANGO_HOST", raising=False)
    args = build_parser().parse_args(["serve"])

    argv = gunicorn_argv(args, 330)

    assert argv[argv.index("--bind") + 1].startswith("127.0.0.1:")


def test_nginx_conf_prints_the_deployment_for_the_configured_body_limit(monkeypatch, capsys):
    monkeypatch.setenv("HANGO_MAX_BODY_BYTES", "1048576")

    assert main(["nginx-conf", "--listen", "0.0.0.0:443", "--upstream", "127.0.0.1:9000"]) == 0

    out = capsys.readouterr().out
    assert "client_max_body_size 1048576;" in out
    assert "listen 0.0.0.0:443;" in out and "server 127.0.0.1:9000;" in out
