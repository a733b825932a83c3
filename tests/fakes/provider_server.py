"""A real local HTTP server that speaks the Anthropic and OpenAI wire formats, for tests.

The official SDKs talk to it over loopback exactly as they talk to the real APIs:

- ``POST /v1/messages`` and ``POST /v1/messages/count_tokens`` (Anthropic; the SDK
  appends these paths to ``base_url``, so use ``server.anthropic_base_url``);
- ``POST /v1/chat/completions`` (OpenAI; that SDK appends ``/chat/completions``
  to a ``base_url`` that ends in ``/v1``, so use ``server.openai_base_url``).

Script it with a queue of steps; each request takes the first queued step that
applies to its path, and an empty queue gives defaults (a plain text answer; a
token count of the body's length // 4, or of ``counter(body)`` when one is given)::

    with FakeProviderServer() as server:
        server.reply("hi", Message("assistant", (ToolUseBlock("t1", "ls", {}),)))
        server.fail(500)                   # the next call of any path gets HTTP 500
        server.hang(30, times=None)        # every call from now on waits 30 s
        server.garbage(path=MESSAGES)      # next /v1/messages gets 200 with a non-JSON body
        server.count(1234)                 # next count_tokens answers 1234
        server.drop()                      # next call is read, then its connection closed unanswered
        server.cut()                       # next call gets the start of a status line, then a close
        provider = AnthropicProvider(server.settings())
        ...
        server.requests[-1].body           # what the SDK sent (parsed JSON)

``validator(body) -> str | None`` runs on every request before any step; a string
makes the server answer HTTP 400 ``invalid_request_error`` with that text, the
way the real API rejects a broken history. Requests are recorded either way.

``answerer(body) -> Reply``, when set, answers a call no queued step answers (instead of the
default text): an answer that depends on the request, for many runs at once.

Anthropic's deferred tool loading (``tests.fakes.anthropic_tool_search``): a tool sent with
``defer_loading`` is not counted until a ``tool_reference`` names it, a request of deferred tools
only is refused (400), and an answer scripted with ``search_answer`` carries the search's blocks
and its ``usage.server_tool_use``.

``cache`` (``tests.fakes.anthropic_cache.AnthropicCache``) gives every ``/v1/messages``
answer the usage Anthropic's prompt cache would report for its body.

``keep_alive=True`` serves HTTP/1.1 with keep-alive connections (the default is one
request per connection); ``drop_reused=True`` with it reads the second request on each
connection and closes the connection without a byte of answer, as a provider closing an
idle connection just as a request goes out does. ``connections`` counts the connections
accepted; every request is recorded, a dropped one too.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from hango.messages import Message, Response, TextBlock, ToolUseBlock, Usage, block_to_dict, text_of
from hango.providers import ProviderSettings
from tests.fakes.anthropic_tool_search import deferral_problem, loaded_body, server_tool_usage, tool_searches

MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"
CHAT_COMPLETIONS = "/v1/chat/completions"
ANSWER_PATHS = frozenset({MESSAGES, CHAT_COMPLETIONS})
ANTHROPIC_PATHS = frozenset({MESSAGES, COUNT_TOKENS})
DEFAULT_TEXT = "Hello from the fake provider."
CUT = b"HTTP/1.1 20"  # an answer that began: the start of a status line
GARBAGE = b'{"id": "msg_garbage", "content": [ this is not JSON'
TEST_API_KEY = "sk-test-fake-provider-0123456789"

Reply = Response | Message | str | dict[str, Any]
Validator = Callable[[dict[str, Any]], str | None]
Counter = Callable[[dict[str, Any]], int]


@dataclass(frozen=True)
class Received:
    """One request the server got: its path, headers (lower-case names) and JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class _Step:
    kind: str  # "answer", "count", "hang", "fail", "garbage", "drop" or "cut"
    paths: frozenset[str] | None  # None: any path
    times: int | None  # None: every matching request from now on
    value: Any = None
    status: int = 200
    seconds: float = 0.0


@dataclass
class _Exchange:
    """What the handler sends back: a status and a body (JSON-encoded unless bytes)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


class FakeProviderServer:
    """A threaded HTTP server on 127.0.0.1 (a free port) with scripted answers."""

    def __init__(
        self,
        validator: Validator | None = None,
        counter: Counter | None = None,
        cache: Any = None,
        keep_alive: bool = False,
        drop_reused: bool = False,
    ) -> None:
        self.validator = validator
        self.keep_alive, self.drop_reused = keep_alive, drop_reused
        self.connections = 0
        self._open: set[Any] = set()  # the sockets of the connections being served (shut on close)
        self.answerer: Callable[[dict[str, Any]], Reply] | None = None
        self.cache = cache
        self.counter = counter or _tokens
        self.requests: list[Received] = []
        self._steps: list[_Step] = []
        self._script = 0  # which script (``reset`` starts the next) a request's steps come from
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-provider",
            daemon=True,
        )
        self._thread.start()

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    def settings(self, timeout: float = 10.0, api_key: str = TEST_API_KEY) -> ProviderSettings:
        """Provider settings that point both SDK adapters at this server."""
        return ProviderSettings(
            anthropic_base_url=self.anthropic_base_url,
            anthropic_api_key=api_key,
            openai_base_url=self.openai_base_url,
            openai_api_key=api_key,
            timeout=timeout,
        )

    # -- scripting -------------------------------------------------------------------------------

    def reply(self, *replies: Reply) -> None:
        """Queue answers for the next calls of /v1/messages or /v1/chat/completions.

        A reply is a canonical ``Response`` (its usage is sent as is), a ``Message``
        or a ``str`` (stop reason and usage derived), or a ``dict`` sent verbatim.
        """
        for value in replies:
            self._push(_Step("answer", ANSWER_PATHS, 1, value=value))

    def count(self, *numbers: int) -> None:
        """Queue answers for the next calls of /v1/messages/count_tokens."""
        for number in numbers:
            self._push(_Step("count", frozenset({COUNT_TOKENS}), 1, value=number))

    def hang(self, seconds: float, times: int | None = 1, path: str | None = None) -> None:
        """Wait ``seconds`` before answering (closing the server ends the wait)."""
        self._push(_Step("hang", _paths(path), times, seconds=seconds))

    def fail(self, status: int, body: Any = None, times: int | None = 1, path: str | None = None) -> None:
        """Answer HTTP ``status`` with ``body``, or with the API's own error shape when None."""
        self._push(_Step("fail", _paths(path), times, value=body, status=status))

    def drop(self, times: int | None = 1, path: str | None = None) -> None:
        """Read the request, then close its connection without a byte of answer."""
        self._push(_Step("drop", _paths(path), times))

    def cut(self, times: int | None = 1, path: str | None = None) -> None:
        """Read the request, send the first bytes of a status line, then close the connection."""
        self._push(_Step("cut", _paths(path), times))

    def garbage(self, times: int | None = 1, path: str | None = None) -> None:
        """Answer 200 with a JSON content type and a body that is not JSON."""
        self._push(_Step("garbage", _paths(path), times))

    def reset(self) -> None:
        """Forget the queued steps, the answerer and the received requests."""
        with self._lock:
            self.answerer = None
            self._steps.clear()
            self.requests.clear()
            self._script += 1

    def bodies(self, path: str | None = None) -> list[Any]:
        """The JSON bodies received, on ``path`` only when given."""
        with self._lock:
            return [r.body for r in self.requests if path is None or r.path == path]

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving, wake hanging handlers and wait for them (a second call does nothing)."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._httpd.shutdown()
        with self._lock:
            for sock in self._open:  # an idle keep-alive connection would hold its handler thread
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> FakeProviderServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- serving (called from handler threads) ---------------------------------------------------

    def _push(self, step: _Step) -> None:
        with self._lock:
            self._steps.append(step)

    def _take(self, path: str, kinds: frozenset[str]) -> _Step | None:
        with self._lock:
            for step in self._steps:
                if step.kind in kinds and (step.paths is None or path in step.paths):
                    if step.times is not None:
                        step.times -= 1
                        if step.times == 0:
                            self._steps.remove(step)
                    return step
        return None

    def _opened(self, sock: Any) -> None:
        with self._lock:
            self.connections += 1
            self._open.add(sock)
        if self._closing.is_set():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _closed(self, sock: Any) -> None:
        with self._lock:
            self._open.discard(sock)

    def _handle(self, path: str, headers: dict[str, str], raw: bytes, served: int = 0) -> _Exchange | bytes:
        """The answer to one request (bytes: write them and close the connection, unanswered when
        empty); ``served``: how many requests its connection carried before."""
        if path not in ANSWER_PATHS | ANTHROPIC_PATHS:
            return _error(path, 404, "not_found_error", f"no route for POST {path}")
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(Received(path, headers, body))
        if not isinstance(body, dict):
            return _error(path, 400, "invalid_request_error", "the request body is not a JSON object")
        problem = deferral_problem(body) if path in ANTHROPIC_PATHS else None
        problem = problem or (self.validator(body) if self.validator else None)
        if problem is not None:
            return _error(path, 400, "invalid_request_error", problem)
        if self.drop_reused and served == 1:
            return b""
        return self._scripted(path, body)

    def _scripted(self, path: str, body: dict[str, Any]) -> _Exchange | bytes:
        script = self._script
        step = self._take(path, frozenset({"hang", "fail", "garbage", "drop", "cut"}))
        if step is not None and step.kind in ("drop", "cut"):
            return b"" if step.kind == "drop" else CUT
        if step is not None and step.kind == "hang":
            self._closing.wait(step.seconds)
            if self._script != script:  # reset while it hung (an earlier test's): never take this script's
                return _Exchange(200, render_reply(path, DEFAULT_TEXT, body, self.counter))
        elif step is not None and step.kind == "fail":
            return _failure(path, step)
        elif step is not None:
            return _Exchange(200, GARBAGE)
        if path == COUNT_TOKENS:
            counted = self._take(path, frozenset({"count"}))
            return _Exchange(200, {"input_tokens": counted.value if counted else self.counter(body)})
        answer = self._take(path, frozenset({"answer"}))
        reply = answer.value if answer else self.answerer(body) if self.answerer else DEFAULT_TEXT
        if self.cache is not None and path == MESSAGES and not isinstance(reply, dict):
            reply = self.cache.answer(as_response(reply, body, self.counter), body)
        return _Exchange(200, render_reply(path, reply, body, self.counter))


class _HTTPServer(ThreadingHTTPServer):
    # Handler threads are joined on close, so no test leaves a thread or socket behind.
    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], fake: FakeProviderServer) -> None:
        self.fake = fake
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0 (one request per connection) unless the server keeps connections alive; those are
    # shut when it closes, so no idle keep-alive handler outlives a test.
    protocol_version = "HTTP/1.0"
    timeout = 30
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.served = 0
        if self.server.fake.keep_alive:
            self.protocol_version = "HTTP/1.1"
        self.server.fake._opened(self.connection)

    def finish(self) -> None:
        self.server.fake._closed(self.connection)
        super().finish()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        exchange = self.server.fake._handle(self.path.split("?")[0], headers, raw, self.served)
        self.served += 1
        if isinstance(exchange, bytes):
            self.wfile.write(exchange)
            self.close_connection = True
            return
        payload = exchange.body if isinstance(exchange.body, bytes) else json.dumps(exchange.body).encode()
        try:
            self.send_response(exchange.status)
            for name, value in exchange.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


def _paths(path: str | None) -> frozenset[str] | None:
    return None if path is None else frozenset({path})


def _tokens(body: Any) -> int:
    """The default count: the body's length // 4, its deferred tools not referenced left out."""
    return max(1, len(json.dumps(loaded_body(body) if isinstance(body, dict) else body)) // 4)


def _error(path: str, status: int, kind: str, message: str) -> _Exchange:
    """An error in the shape of the API that owns ``path``."""
    if path in ANTHROPIC_PATHS:
        return _Exchange(status, {"type": "error", "error": {"type": kind, "message": message}})
    return _Exchange(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})


def _failure(path: str, step: _Step) -> _Exchange:
    if step.value is None:
        return _error(path, step.status, "api_error", f"scripted failure {step.status}")
    if isinstance(step.value, str | bytes):
        body = step.value.encode() if isinstance(step.value, str) else step.value
        return _Exchange(step.status, body, {"Content-Type": "text/plain"})
    return _Exchange(step.status, step.value)


def as_response(reply: Response | Message | str, request_body: Any, counter: Counter = _tokens) -> Response:
    """The canonical response a scripted reply stands for; usage derived from the sizes (``counter``)."""
    if isinstance(reply, Response):
        return reply
    message = reply if isinstance(reply, Message) else Message("assistant", (TextBlock(reply),))
    calls = any(isinstance(b, ToolUseBlock) for b in message.content)
    usage = Usage(input_tokens=counter(request_body), output_tokens=max(1, len(text_of(message)) // 4))
    return Response(message, "tool_use" if calls else "end_turn", usage, tool_searches(message))


def render_reply(path: str, reply: Reply, request_body: dict[str, Any], counter: Counter = _tokens) -> Any:
    """The JSON body that answers ``request_body`` on ``path`` with ``reply``."""
    if isinstance(reply, dict):
        return reply
    response = as_response(reply, request_body, counter)
    model = request_body.get("model", "fake-model")
    if path == CHAT_COMPLETIONS:
        return openai_completion(response, model)
    return anthropic_message(response, model)


def anthropic_message(response: Response, model: str) -> dict[str, Any]:
    """A canonical response as the body of an Anthropic Messages API answer."""
    usage = response.usage
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block_to_dict(b) for b in response.message.content],
        "stop_reason": response.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            **({"server_tool_use": server_tool_usage(response)} if response.tool_searches else {}),
        },
    }


_FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def openai_completion(response: Response, model: str) -> dict[str, Any]:
    """A canonical response as the body of an OpenAI chat completion (cache reads inside prompt tokens)."""
    usage = response.usage
    calls = [b for b in response.message.content if isinstance(b, ToolUseBlock)]
    message: dict[str, Any] = {"role": "assistant", "content": text_of(response.message) or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.input)}}
            for c in calls
        ]
    prompt = usage.input_tokens + usage.cache_read_tokens
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _FINISH_REASONS.get(response.stop_reason, "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        },
    }
