"""A model server for tests and demos: OpenAI's chat-completions API on 127.0.0.1, answering
with recorded responses instead of a model.

A recording (JSON) holds conversations, each with the text that picks it (found in the
first user message: an instance's problem statement) and its steps, one per model call:
the assistant's text and the bash command of its tool call, and optionally the usage to
report. The n-th call of a conversation (counted by the assistant messages the request
holds) gets its n-th step; past the last, a reply without a tool call (an agent's format
error). Usage not recorded is counted as a quarter of the characters, so that token and
cost budgets have something to count.

    python -m evalrepro.agents.replay RECORDING [--port N]   # prints the port, serves

Nothing here is a model: a run against it shows the harness, never an agent's skill.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.errors import UserError, validation_message


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = ""
    command: str | None = None
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Text of the first user message that picks this conversation.
    when: str = Field(min_length=1)
    steps: list[Step]


class Recording(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    conversations: list[Conversation]

    @classmethod
    def read(cls, path: Path) -> Recording:
        try:
            return cls.model_validate_json(path.read_bytes())
        except OSError as error:
            raise UserError(f"{path}: cannot read the recording ({error.strerror})") from None
        except ValueError as error:
            raise UserError(f"{path}: not a recording: {validation_message(error)}") from None

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """The chat-completions response to ``request``."""
        messages = request.get("messages") or []
        first = next((m for m in messages if m.get("role") == "user"), {})
        text = _text(first.get("content"))
        calls = sum(1 for m in messages if m.get("role") == "assistant")
        conversation = next((c for c in self.conversations if c.when in text), None)
        step = Step(content="(no recorded response for this conversation)")
        if conversation is not None and calls < len(conversation.steps):
            step = conversation.steps[calls]
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if step.command is not None:
            message["tool_calls"] = [
                {
                    "id": f"call_{calls}",
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "arguments": json.dumps({"command": step.command}),
                    },
                }
            ]
        prompt = step.prompt_tokens
        if prompt is None:
            prompt = len(json.dumps(messages)) // 4
        completion = step.completion_tokens
        if completion is None:
            completion = (len(step.content) + len(step.command or "")) // 4 + 1
        return {
            "id": f"replay-{calls}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", "replay"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if step.command is not None else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class ReplayServer:
    """The server, on 127.0.0.1, in a thread of this process (``with`` starts and stops it)."""

    def __init__(self, recording: Recording, port: int = 0) -> None:
        self.recording = recording
        handler = type("Handler", (_Handler,), {"recording": recording})
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    recording: Recording

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no such endpoint: {self.path}"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(min(length, 64 << 20)))
        except ValueError:
            self._send(400, {"error": {"message": "the request is not JSON"}})
            return
        self._send(200, self.recording.reply(request))

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: a test's output is not the server's log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        server = ReplayServer(Recording.read(args.recording), args.port)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(server.port, flush=True)
    with server:
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
