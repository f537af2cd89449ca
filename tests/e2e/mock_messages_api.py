"""A scripted stand-in for Anthropic's Messages API on 127.0.0.1, for the real Claude Code CLI.

The e2e tests run the real `claude` binary, which must not reach the network and must behave the
same on every run: it is pointed here (`ANTHROPIC_BASE_URL`) and this server plays a script, one
assistant turn per request of the agent's main loop. Replies are streamed as the real API streams
them (server-sent events: `message_start`, then per content block `content_block_start`,
`content_block_delta`… `content_block_stop`, then `message_delta` with the stop reason and
`message_stop`), tool calls as `tool_use` blocks whose input arrives as `input_json_delta`
fragments, so the client parses exactly what it parses in production.

Which turn to play is read from the conversation itself (how many assistant turns it holds
beyond those it held at its first request: a resumed conversation brings earlier runs' turns),
not from a counter of requests: the client's side requests (a title, a topic, a token count)
and its retries then never shift the script. Every request is kept for the tests to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5-20250929"


@dataclass(frozen=True)
class Text:
    """An assistant text block."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """An assistant tool call; `input` is the tool's arguments."""

    name: str
    input: dict[str, Any]
    id: str = ""


Block = Text | ToolUse


def _text_of(message: dict[str, Any]) -> str:
    """A message's text, whether its content is a string or a list of blocks."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


@dataclass
class Script:
    """The assistant's turns in order; past the end the assistant says `done` and stops.

    `others` are further conversations (a subagent's), each chosen when its key appears in the
    conversation's first user message (the prompt the parent gave it).
    """

    turns: list[list[Block]]
    others: dict[str, list[list[Block]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    unknown_paths: list[str] = field(default_factory=list)
    _baselines: dict[str, int] = field(default_factory=dict)

    def turn_for(self, body: dict[str, Any]) -> list[Block]:
        """The turn that answers this conversation: the one after its last assistant turn."""
        messages = body.get("messages", [])
        first = _text_of(messages[0]) if messages else ""
        key = next((key for key in self.others if key in first), "")
        turns = self.others[key] if key else self.turns
        done = sum(1 for message in messages if message.get("role") == "assistant")
        # A resumed conversation arrives with the turns of earlier runs: count from there.
        index = done - self._baselines.setdefault(key, done)
        if 0 <= index < len(turns):
            return turns[index]
        return [Text("done")]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the client sent back, in order, without repeats."""
        seen: dict[str, dict[str, Any]] = {}
        for body in self.requests:
            for message in body.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())


def _is_main_loop(body: dict[str, Any]) -> bool:
    """The agent's own conversation offers tools; side requests (titles, topics) do not."""
    return bool(body.get("tools"))


def sse_events(blocks: list[Block], message_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of one streamed assistant message, in the API's order."""
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 12,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 1,
                },
            },
        },
    )
    stop_reason = "end_turn"
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block.text}]
        else:
            stop_reason = "tool_use"
            tool_id = block.id or f"toolu_{message_id[4:]}_{index:02d}"
            start = {"type": "tool_use", "id": tool_id, "name": block.name, "input": {}}
            arguments = json.dumps(block.input)
            middle = len(arguments) // 2  # two fragments, as the real API splits its JSON
            deltas = [
                {"type": "input_json_delta", "partial_json": ""},
                {"type": "input_json_delta", "partial_json": arguments[:middle]},
                {"type": "input_json_delta", "partial_json": arguments[middle:]},
            ]
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        if index == 0:
            yield "ping", {"type": "ping"}
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _final_message(blocks: list[Block], message_id: str) -> dict[str, Any]:
    """The same message, whole, for a request that did not ask to stream."""
    content: list[dict[str, Any]] = []
    stop_reason = "end_turn"
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        else:
            stop_reason = "tool_use"
            tool_id = block.id or f"toolu_{message_id[4:]}_{index:02d}"
            content.append(
                {"type": "tool_use", "id": tool_id, "name": block.name, "input": block.input}
            )
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 20},
    }


class MockMessagesAPI:
    """The server: `with MockMessagesAPI(script) as api:` then point the client at `api.url`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._count = 0
        handler = self._handler()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give the client (`ANTHROPIC_BASE_URL`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> MockMessagesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_id(self) -> str:
        with self._lock:
            self._count += 1
            return f"msg_e2e{self._count:04d}"

    def _answer(self, body: dict[str, Any]) -> tuple[list[Block], str]:
        """The blocks to send for one request, and its message id."""
        message_id = self._next_id()
        if not _is_main_loop(body):
            return [Text("Scripted session")], message_id
        with self._lock:
            self.script.requests.append(body)
        return self.script.turn_for(body), message_id

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read `script.requests`, not a log."""

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                api.script.unknown_paths.append(f"GET {self.path}")
                self._json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}}
                )

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                path = self.path.split("?", 1)[0]
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if path.endswith("/v1/messages/count_tokens"):
                    self._json(200, {"input_tokens": 12})
                    return
                if not path.endswith("/v1/messages"):
                    api.script.unknown_paths.append(f"POST {self.path}")
                    self._json(
                        404,
                        {"type": "error", "error": {"type": "not_found_error", "message": "mock"}},
                    )
                    return
                blocks, message_id = api._answer(body)
                if not body.get("stream"):
                    self._json(200, _final_message(blocks, message_id))
                    return
                chunks = [
                    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    for name, data in sse_events(blocks, message_id)
                ]
                payload = b"".join(chunks)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()

        return Handler
