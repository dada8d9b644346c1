"""A loopback HTTP server on 127.0.0.1 speaking OpenAI-style chat completions: a stand-in
for a hosted API (or vLLM, Ollama, llama.cpp's server), not a model.

Each request takes the next entry of a script (the last one repeats):

- ``{"reply": "increment"}``: a completion whose content is ``{"value": input.value + 1}``
  (the input read from the prompt's ``# Input (JSON)`` section);
- ``{"reply": "gate", "at": n}``: a verifier verdict, ``accepted`` once ``value >= n``
  (also the answer to any request whose schema asks for signals, with ``n`` = 3);
- ``{"content": "..."}``: a completion with this content;
- ``{"respond": function}``: a completion whose content is ``function(body)`` as JSON (the
  request's JSON body in, any JSON-ready reply out: a scripted model);
- ``{"refusal": "..."}``: a completion whose message refuses (structured-output style);
- ``{"status": 429 | 500 | 401, ...}``: an error response (``retry_after`` adds a
  Retry-After header).

Any entry may add ``"hold": threading.Event``: the reply waits until the event is set (a
slow server; set it at the end of the test to release the waiting handlers).

Any completion entry may add ``"finish_reason"`` (default ``"stop"``), e.g. ``"length"``
for a reply cut at ``max_tokens``.

Completions report ``usage`` (``prompt_tokens`` 11, ``completion_tokens`` 7). ``GET
/v1/models`` lists ``models`` (one, ``standin``, unless a test sets it). Every request is
recorded (path, headers, JSON body).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD_LIMIT_S = 60.0
"""The longest a ``hold`` entry keeps a request waiting, should a test not release it."""
_INPUT = re.compile(r"# Input \(JSON\)\n\n(.*?)\n\n# ", re.DOTALL)


@dataclass
class ChatServer:
    script: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    models: list[str] = field(default_factory=lambda: ["standin"])
    """What ``GET /v1/models`` lists."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_entry(self) -> dict[str, Any]:
        with self._lock:
            posted = [r for r in self.requests if "body" in r]
            index = min(len(posted) - 1, len(self.script) - 1)
            return self.script[index]

    def completions(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]


def _input_of(body: dict[str, Any]) -> Any:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user" and (match := _INPUT.search(message["content"])):
            return json.loads(match.group(1))
    return None


def _completion(
    content: str | None, refusal: str | None = None, finish_reason: str = "stop"
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "model": "standin",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, document: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            with server._lock:
                server.requests.append({"path": self.path, "headers": dict(self.headers)})
            self._send(
                200,
                {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]},
            )

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with server._lock:
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
            entry = server.next_entry()
            if "hold" in entry:
                entry["hold"].wait(HOLD_LIMIT_S)
            finish = str(entry.get("finish_reason", "stop"))
            if "status" in entry:
                headers = {}
                if "retry_after" in entry:
                    headers["Retry-After"] = str(entry["retry_after"])
                self._send(
                    entry["status"],
                    {"error": {"message": f"stand-in {entry['status']}", "type": "standin"}},
                    headers,
                )
                return
            if "refusal" in entry:
                self._send(200, _completion(None, entry["refusal"], finish))
                return
            if "content" in entry:
                self._send(200, _completion(entry["content"], None, finish))
                return
            if "respond" in entry:
                self._send(200, _completion(json.dumps(entry["respond"](body)), None, finish))
                return
            value = _input_of(body) or {}
            schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
            if entry.get("reply") == "gate" or "signals" in schema.get("properties", {}):
                verdict = "accepted" if value["value"] >= entry.get("at", 3) else "rejected"
                reply: Any = {"output": None, "signals": {"verdict": verdict}, "diagnostic": None}
            else:
                reply = {"value": value["value"] + 1}
            self._send(200, _completion(json.dumps(reply), None, finish))

    return Handler


@contextmanager
def chat_server(*script: dict[str, Any]) -> Iterator[ChatServer]:
    """Serve ``script`` on a free loopback port for the duration of the block."""
    state = ChatServer(list(script) or [{"reply": "increment"}])
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, name="chat-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
