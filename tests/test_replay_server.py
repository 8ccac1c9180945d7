"""The replay model server: OpenAI's chat-completions API on 127.0.0.1, answering each
conversation with its recorded steps, in order, as tool calls of a ``bash`` tool."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from evalrepro.agents.replay import Conversation, Recording, ReplayServer, Step
from evalrepro.errors import UserError

RECORDING = Recording(
    conversations=[
        Conversation(
            when="division by zero",
            steps=[
                Step(content="Look first.", command="ls calc", prompt_tokens=100),
                Step(content="Done.", command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
            ],
        ),
        Conversation(when="power operator", steps=[Step(content="no tool call")]),
    ]
)


def ask(url: str, messages: list[dict]) -> dict:
    body = json.dumps({"model": "replay", "messages": messages}).encode()
    request = urllib.request.Request(
        f"{url}/chat/completions", body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_each_call_gets_the_next_recorded_step_of_its_conversation():
    with ReplayServer(RECORDING) as server:
        first = [
            {"role": "system", "content": "x"},
            {"role": "user", "content": "Fix division by zero"},
        ]
        one = ask(server.url, first)
        call = one["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == "bash"
        assert json.loads(call["function"]["arguments"]) == {"command": "ls calc"}
        assert one["usage"]["prompt_tokens"] == 100
        two = ask(
            server.url, [*first, one["choices"][0]["message"], {"role": "tool", "content": "ok"}]
        )
        command = json.loads(two["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        assert command["command"].startswith("echo COMPLETE_TASK")
        assert two["usage"]["completion_tokens"] > 0  # counted when not recorded


def test_past_the_last_step_or_in_an_unknown_conversation_there_is_no_tool_call():
    with ReplayServer(RECORDING) as server:
        for text in ("the power operator", "something else entirely"):
            reply = ask(server.url, [{"role": "user", "content": [{"type": "text", "text": text}]}])
            assert "tool_calls" not in reply["choices"][0]["message"]
            assert reply["choices"][0]["finish_reason"] == "stop"


def test_it_listens_on_loopback_only_and_answers_nothing_else():
    with ReplayServer(RECORDING) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(
                urllib.request.Request(f"{server.url}/embeddings", b"{}", method="POST"), timeout=10
            )
        assert error.value.code == 404


def test_a_recording_that_is_not_one_is_one_line(tmp_path):
    path = tmp_path / "recording.json"
    path.write_text('{"conversations": [{"steps": []}]}')
    with pytest.raises(UserError, match=r"recording\.json: not a recording: .*when"):
        Recording.read(path)
