"""What the client commands share: an HTTP client of the public API, and one way to run and report.

Exit codes: 0 done, 1 the server answered with an error, 2 usage or configuration error,
3 the server could not be reached. Errors go to stderr with the server's message, code and every
detail it gave (``ApiError``, the one place an API error is rendered).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import requests

DEFAULT_API_URL = "http://127.0.0.1:8080"
# Connect quickly; reads wait past the server's run deadline (HANGO_RUN_TIMEOUT, 300 s).
TIMEOUT = (5.0, 330.0)

Action = Callable[["Client", argparse.Namespace], Any]
Show = Callable[[Any], None]


class ClientError(Exception):
    """A failure to report on stderr with an exit code."""

    exit_code = 1


class UsageError(ClientError):
    exit_code = 2


class ServerUnreachable(ClientError):
    exit_code = 3


class ApiError(ClientError):
    """The server answered 4xx/5xx: its envelope's message and code."""

    def __init__(self, response: requests.Response) -> None:
        try:
            error = response.json()["error"]
            message, self.code = error["message"], error["code"]
        except (ValueError, KeyError, TypeError):
            message, self.code, error = response.reason or "error", "http_error", {}
        self.status = response.status_code
        self.details = error.get("details")
        details = self.details
        if isinstance(details, dict):  # a detail that repeats the code (``reason``) says nothing more
            details = {key: value for key, value in details.items() if value != self.code}
        said = "; ".join(_detail_lines(details))
        super().__init__(f"{message} ({self.status} {self.code})" + (f"; {said}" if said else ""))


# Where a request-validation error found a field (flask-smorest's first level): not part of its name.
_LOCATIONS = frozenset({"json", "query", "path", "headers", "form", "files", "cookies"})


def _detail_lines(details: Any, name: str = "") -> list[str]:
    """Every detail of an error envelope, one ``field: what`` each (``to: expected a call id or 'next'``,
    ``parts: tool:nope``): nested fields joined by dots, lists of words by commas."""
    if isinstance(details, dict):
        lines = []
        for key, value in details.items():
            located = not name and key in _LOCATIONS and isinstance(value, dict)
            inner = name if located else f"{name}.{key}" if name else str(key)
            lines.extend(_detail_lines(value, inner))
        return lines
    if isinstance(details, list) and not any(isinstance(v, dict | list) for v in details):
        words = ", ".join(map(str, details))
        return [f"{name}: {words}" if name else words] if details else []
    if isinstance(details, list):
        return [line for value in details for line in _detail_lines(value, name)]
    if details is None:
        return []
    return [f"{name}: {details}" if name else str(details)]


class Client:
    """A ``requests`` session on ``base_url`` that sends the API key with every request."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = requests.Session()
        self._http.headers["Authorization"] = f"Bearer {api_key}"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, params: dict | None = None, body: Any = None) -> Any:
        """The decoded JSON answer (None for 204); raises ``ClientError`` on any failure."""
        return self.exchange(method, path, params=params, body=body)[0]

    def exchange(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        body: Any = None,
        headers: dict | None = None,
    ) -> tuple[Any, Mapping[str, str]]:
        """The decoded JSON answer and the response's headers (for an ``ETag``); raises ``ClientError``."""
        url = f"{self.base_url}{path}"
        params = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(
                method, url, params=params, json=body, headers=headers, timeout=TIMEOUT
            )
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise ServerUnreachable(f"cannot reach the hango server at {self.base_url}") from exc
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema) as exc:
            raise UsageError(f"HANGO_API_URL is not a valid URL: {self.base_url!r}") from exc
        if response.status_code >= 400:
            raise ApiError(response)
        if response.status_code == 204:
            return None, response.headers
        try:
            return response.json(), response.headers
        except ValueError as exc:
            raise ClientError(f"the server's answer to {method} {path} is not JSON") from exc


def from_env() -> Client:
    """A client on ``HANGO_API_URL`` (default ``http://127.0.0.1:8080``) with ``HANGO_API_KEY``."""
    key = os.environ.get("HANGO_API_KEY", "").strip()
    if not key:
        raise UsageError(
            "HANGO_API_KEY is not set: export HANGO_API_URL (the URL scripts/run prints) and HANGO_API_KEY "
            "(its owner or member key)"
        )
    return Client(api_url(os.environ.get("HANGO_API_URL") or DEFAULT_API_URL), key)


def api_url(text: str) -> str:
    """``HANGO_API_URL`` when it is an ``http(s)://host`` URL; a usage error says what is wrong."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"HANGO_API_URL must start with http:// or https:// and name a host, e.g. {DEFAULT_API_URL} "
            f"(it is {text!r})"
        )
    return text.strip()


def run(action: Action, show: Show, args: argparse.Namespace) -> int:
    """Run one client action: print its result (raw JSON with ``--json``), or report its error."""
    try:
        with from_env() as client:
            result = action(client, args)
    except ClientError as exc:
        print(f"hango: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        show(result)
    return 0


def add_command(
    actions: argparse._SubParsersAction, name: str, help_text: str, action: Action, show: Show
) -> argparse.ArgumentParser:
    """A client (sub)command with ``--json`` that runs ``action`` and prints with ``show``."""
    parser = actions.add_parser(name, help=help_text, description=help_text)
    parser.add_argument("--json", action="store_true", help="print the server's JSON answer")
    parser.set_defaults(handler=partial(run, action, show))
    return parser


def add_page_options(parser: argparse.ArgumentParser) -> None:
    """``--limit`` and ``--cursor`` for a listing command."""
    parser.add_argument("--limit", type=int, default=None, help="at most this many (1-1000, default 100)")
    parser.add_argument("--cursor", default=None, help="continue after a previous page's next_cursor")
