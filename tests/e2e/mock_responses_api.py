"""A scripted stand-in for OpenAI's Responses API on 127.0.0.1, for the real Codex CLI.

Codex is pointed here through a custom model provider in its `config.toml` (`base_url`,
`wire_api = "responses"`), so it runs offline and the same way on every run. Each request of
the agent's loop gets the next scripted turn, streamed as the real API streams it: server-sent
events `response.created`, then per output item `response.output_item.added`, its deltas
(`response.output_text.delta` for a message) and `response.output_item.done`, and last
`response.completed` with the whole output and the usage. A shell command is a `function_call`
to the `exec_command` tool Codex 0.17x offers (`{"cmd": ...}`).

As with the Messages API mock, the turn to play is read from the request (how many assistant
items its input holds beyond those of its first request), never from a counter.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-5-codex"


@dataclass(frozen=True)
class Say:
    """An assistant message."""

    text: str


@dataclass(frozen=True)
class Shell:
    """A shell command through Codex's `exec_command` tool."""

    cmd: str


Item = Say | Shell


def _is_assistant(item: dict[str, Any]) -> bool:
    return item.get("type") == "function_call" or (
        item.get("type") == "message" and item.get("role") == "assistant"
    )


@dataclass
class Script:
    """The assistant's turns in order; past the end it says `done`."""

    turns: list[list[Item]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    _baseline: list[int] = field(default_factory=list)

    def turn_for(self, body: dict[str, Any]) -> list[Item]:
        """The turn that answers this request."""
        done = sum(1 for item in body.get("input", []) if _is_assistant(item))
        if not self._baseline:
            self._baseline.append(done)
        index = done - self._baseline[0]
        return self.turns[index] if 0 <= index < len(self.turns) else [Say("done")]

    def outputs(self) -> list[str]:
        """Every `function_call_output` Codex sent back, in order, without repeats."""
        seen: dict[str, str] = {}
        for body in self.requests:
            for item in body.get("input", []):
                if item.get("type") == "function_call_output":
                    seen.setdefault(str(item.get("call_id")), str(item.get("output")))
        return list(seen.values())


def _items(turn: list[Item], response_id: str) -> list[dict[str, Any]]:
    """The output items of one response."""
    items: list[dict[str, Any]] = []
    for index, entry in enumerate(turn):
        if isinstance(entry, Shell):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{response_id}_{index}",
                    "call_id": f"call_{response_id}_{index}",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": entry.cmd}),
                    "status": "completed",
                }
            )
        else:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{response_id}_{index}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": entry.text, "annotations": []}],
                }
            )
    return items


def sse_events(items: list[dict[str, Any]], response_id: str) -> Iterator[dict[str, Any]]:
    """The events of one streamed response, in the API's order."""
    sequence = 0

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal sequence
        sequence += 1
        return {"type": kind, "sequence_number": sequence, **fields}

    response = {"id": response_id, "object": "response", "model": MODEL, "output": []}
    yield event("response.created", response={**response, "status": "in_progress"})
    for index, item in enumerate(items):
        started = {**item, "content": []} if item["type"] == "message" else item
        yield event("response.output_item.added", output_index=index, item=started)
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event(
                "response.output_text.delta",
                output_index=index,
                item_id=item["id"],
                content_index=0,
                delta=text,
            )
        yield event("response.output_item.done", output_index=index, item=item)
    usage = {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 32,
    }
    completed = {**response, "status": "completed", "output": items, "usage": usage}
    yield event("response.completed", response=completed)


class MockResponsesAPI:
    """The server: `with MockResponsesAPI(script) as api:`, then `base_url = api.url + "/v1"`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._count = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The server's root URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> MockResponsesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _answer(self, body: dict[str, Any]) -> bytes:
        with self._lock:
            self._count += 1
            response_id = f"resp_e2e{self._count:04d}"
            self.script.requests.append(body)
            turn = self.script.turn_for(body)
        events = sse_events(_items(turn, response_id), response_id)
        return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read `script.requests`."""

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(404, "application/json", b'{"error": {"message": "mock"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if not self.path.split("?", 1)[0].endswith("/responses"):
                    self._send(404, "application/json", b'{"error": {"message": "mock"}}')
                    return
                self._send(200, "text/event-stream", api._answer(body))

        return Handler
