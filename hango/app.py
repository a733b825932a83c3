"""The application factory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from flask import Flask, Response, request
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from werkzeug.routing import RequestRedirect

from hango import authz, telemetry
from hango.api import HangoApi, init_errors
from hango.config import Config, load_config
from hango.db import db, migrate
from hango.jobs import web_queue
from hango.json_provider import OrjsonProvider
from hango.mcp.catalog import catalog_servers
from hango.providers import SDKS
from hango.tenancy import load_principal
from hango.try_pool import try_pool


class MissingDatabaseUrl(RuntimeError):
    """The app was created without a database URL."""


def create_app(config: Config | Mapping[str, Any] | None = None) -> Flask:
    """Build the hango WSGI app from defaults, ``HANGO_*`` variables and ``config``."""
    cfg = config if isinstance(config, Config) else load_config(overrides=config)
    catalog_servers(cfg)  # a malformed MCP catalog fails at start, not at a tenant's first attach
    if not cfg.database_url:
        raise MissingDatabaseUrl("HANGO_DATABASE_URL is not set: start hango with `hango serve`")
    app = Flask(__name__, root_path=str(cfg.data_dir.parent), static_folder=None)
    app.config.update(
        HANGO=cfg,
        MAX_CONTENT_LENGTH=cfg.max_body_bytes,
        API_TITLE="hango",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        # Every /v1 route takes an API key as a bearer token (only the probes, outside the document, do not).
        API_SPEC_OPTIONS={
            "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
            "security": [{"bearer": []}],
        },
    )
    app.json = OrjsonProvider(app)
    app.json.sort_keys = False
    telemetry.setup(cfg, SDKS)
    FlaskInstrumentor().instrument_app(app)
    db.init_app(app, cfg.database_url)
    try_pool.init_app(app)
    app.extensions["hango.queue"] = web_queue(app.extensions["hango.engine"])
    if cfg.check_schema:
        migrate.check_current(app.extensions["hango.engine"])
    init_errors(app)
    _register_blueprints(app, HangoApi(app))
    app.before_request(_relative_redirect)
    app.before_request(load_principal)
    app.before_request(authz.enforce)
    app.after_request(_commit)
    return app


def _register_blueprints(app: Flask, api: HangoApi) -> None:
    from blueprints import API_BLUEPRINTS, PLAIN_BLUEPRINTS

    for blueprint in API_BLUEPRINTS:
        api.register_blueprint(blueprint)
    for blueprint in PLAIN_BLUEPRINTS:
        app.register_blueprint(blueprint)


def _relative_redirect() -> None:
    """Make werkzeug's slash redirects (``/admin`` → ``/admin/``) name the path only.

    werkzeug builds them from the request's ``Host`` header, which the client writes:
    ``Host: evil.example`` would answer ``Location: http://evil.example/admin/``.
    """
    redirect = request.routing_exception
    if isinstance(redirect, RequestRedirect):
        url = urlsplit(redirect.new_url)
        request.routing_exception = RequestRedirect(urlunsplit(("", "", url.path, url.query, "")))


def _commit(response: Response) -> Response:
    """Commit the request's work when it succeeded; teardown rolls back everything else."""
    if response.status_code < 400:
        db.commit()
    return response
