"""Loopback HTTP servers that speak the OpenAI chat-completions and Anthropic messages protocols.

A real threading HTTP server on 127.0.0.1 (a free port) answers each POST with the next scripted
reply: a completion with usage fields, or an HTTP error (429, 500, ...) carrying `retry-after-ms`
so that the SDKs' own retries run without waiting. Every request is kept for the test to inspect.
The real `openai` and `anthropic` SDKs talk to it through their `base_url`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator, Literal

import pytest

Protocol = Literal["openai", "anthropic"]
RETRY_AFTER_MS = "5"
"""Sent with every error so that the SDK's backoff waits milliseconds, not seconds."""
SERVED_MODELS = ("test-model", "cheap-model")
"""What GET /v1/models lists (OpenAI protocol)."""


@dataclass(frozen=True)
class Reply:
    """A completion the server returns."""

    text: str
    tokens_in: int = 1000
    tokens_out: int = 200


@dataclass(frozen=True)
class Failure:
    """An HTTP error the server returns instead of a completion."""

    status: int
    message: str = "scripted failure"


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict = field(default_factory=dict)


class ScriptedServer:
    """Answers POSTs from a script in order; GET /v1/models lists SERVED_MODELS. Use as a context manager.

    A one-token request (`max_tokens` 1, the anthropic preflight) is answered without using the script.
    """

    def __init__(self, protocol: Protocol, api_key: str = "test-key") -> None:
        self.protocol = protocol
        self.api_key = api_key
        self.requests: list[Request] = []
        self.unknown_models: set[str] = set()
        """Models answered with 404 (not found), as a provider answers a model it does not serve."""
        self._script: deque[Reply | Failure] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        """The base URL the SDK is given."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}" + ("/v1" if self.protocol == "openai" else "")

    def enqueue(self, *steps: Reply | Failure | str) -> None:
        """Append replies (a bare string is a Reply with default usage) or failures to the script."""
        with self._lock:
            self._script.extend(Reply(s) if isinstance(s, str) else s for s in steps)

    @property
    def posts(self) -> list[Request]:
        """The POST requests received, in order."""
        return [r for r in self.requests if r.method == "POST"]

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self) -> Reply | Failure:
        with self._lock:
            return self._script.popleft() if self._script else Failure(400, "the test script is exhausted")

    def _authorized(self, headers: dict[str, str]) -> bool:
        bearer = headers.get("authorization") == f"Bearer {self.api_key}"
        if self.protocol == "openai":
            return bearer
        return bearer or headers.get("x-api-key") == self.api_key  # SDK versions differ on the header

    def _completion(self, reply: Reply, model: str) -> dict:
        if self.protocol == "openai":
            return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.text}}],
                    "usage": {"prompt_tokens": reply.tokens_in, "completion_tokens": reply.tokens_out,
                              "total_tokens": reply.tokens_in + reply.tokens_out}}
        return {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": reply.text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": reply.tokens_in, "output_tokens": reply.tokens_out}}

    def _error(self, failure: Failure) -> dict:
        if self.protocol == "openai":
            return {"error": {"message": failure.message, "type": "test_error", "code": None}}
        return {"type": "error", "error": {"type": "api_error", "message": failure.message}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, payload: dict, retry: bool = False) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                if retry:
                    self.send_header("retry-after-ms", RETRY_AFTER_MS)
                self.end_headers()
                self.wfile.write(body)

            def _receive(self) -> tuple[Request, bool]:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, self.path, headers, body)
                server.requests.append(request)
                return request, server._authorized(headers)

            def do_GET(self) -> None:
                _, ok = self._receive()
                if not ok:
                    self._send(401, server._error(Failure(401, "bad key")))
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in SERVED_MODELS]})
                else:
                    self._send(404, server._error(Failure(404, f"no route {self.path}")))

            def do_POST(self) -> None:
                request, ok = self._receive()
                if not ok:
                    self._send(401, server._error(Failure(401, "bad key")))
                    return
                if request.body.get("model") in server.unknown_models:
                    self._send(404, server._error(Failure(404, f"model {request.body['model']} not found")))
                    return
                if request.body.get("max_tokens") == 1:  # a preflight ping: answered apart from the script
                    self._send(200, server._completion(Reply("p", 1, 1), request.body.get("model", "")))
                    return
                step = server._next()
                if isinstance(step, Failure):
                    self._send(step.status, server._error(step), retry=True)
                else:
                    self._send(200, server._completion(step, request.body.get("model", "")))

        return Handler


def closed_port_url(protocol: Protocol) -> str:
    """A loopback URL where nothing listens (a port bound, then closed)."""
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    host, port = probe.server_address[:2]
    probe.server_close()
    return f"http://{host}:{port}" + ("/v1" if protocol == "openai" else "")


@pytest.fixture
def openai_server(monkeypatch) -> Iterator[ScriptedServer]:
    """A running OpenAI-protocol server, with OPENAI_API_KEY set to its key."""
    with ScriptedServer("openai") as server:
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        yield server


@pytest.fixture
def anthropic_server(monkeypatch) -> Iterator[ScriptedServer]:
    """A running Anthropic-protocol server, with ANTHROPIC_API_KEY set to its key."""
    with ScriptedServer("anthropic") as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
        yield server


def fenced(source: str, claim: str) -> str:
    """A well-formed model reply: the file in a ```python block and its CLAIM line."""
    return f"Here is the kernel.\n\n```python\n{source}```\n\nCLAIM: {claim}\n"
