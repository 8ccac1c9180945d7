"""Runs mini-swe-agent's loop for evalrepro, in the agent's own Python environment.

Started by :mod:`evalrepro.agents.mini_swe_agent` as ``PYTHON mini_swe_agent_driver.py``;
it imports nothing of evalrepro's (evalrepro is not installed where it runs). Its settings
are the first line of stdin (JSON); the model's key, if any, is ``$EVALREPRO_MODEL_API_KEY``.
Then it speaks JSON lines: it writes a request or an event on its stdout and, for a
request, reads the answer on stdin:

- ``hello``: the package's version (event);
- ``query``: may the agent call the model again? (``{"stop": BUDGET}`` or ``{}``);
- ``step``: a model call's reply, its commands, usage and cost (event);
- ``exec``: run a command in the sandbox (the answer: its output and exit status);
- ``end``: how the loop ended (event; the last line).

Everything the package or litellm prints goes to stderr, never into the channel. Budgets
are the harness's: the package's own step and cost limits are off, and each ``query``
asks the harness.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

# litellm and mini-swe-agent read these when imported: no network at import, no banner,
# no configuration of the user's read or written.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # fd 1 is stderr from now on: a print is never a message
    sys.stdout = sys.stderr
    settings = json.loads(sys.stdin.readline())

    def send(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        send(message)
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(3)  # the harness is gone
        return json.loads(line)

    import minisweagent
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.exceptions import FormatError, LimitsExceeded, Submitted
    from minisweagent.models.litellm_model import LitellmModel

    send({"type": "hello", "version": minisweagent.__version__})

    class SandboxEnvironment:
        """mini-swe-agent's environment: every command is the harness's ``exec``."""

        def __init__(self) -> None:
            self.config = {"cwd": settings["cwd"]}

        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
            answer = ask(
                {
                    "type": "exec",
                    "command": action.get("command", ""),
                    "cwd": cwd,
                    "timeout": timeout,
                }
            )
            output = {
                "output": answer["output"],
                "returncode": answer["returncode"],
                "exception_info": answer.get("exception_info", ""),
            }
            lines = output["output"].lstrip().splitlines(keepends=True)
            done = lines and lines[0].strip() == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
            if done and output["returncode"] == 0:
                submission = "".join(lines[1:])
                raise Submitted(
                    {
                        "role": "exit",
                        "content": submission,
                        "extra": {"exit_status": "Submitted", "submission": submission},
                    }
                )
            return output

        def get_template_vars(self, **kwargs: Any) -> dict:
            # Never the host's environment (LocalEnvironment's): no key reaches a prompt.
            return {"cwd": settings["cwd"], "problem_path": settings["problem_path"], **kwargs}

        def serialize(self) -> dict:
            return {"info": {"config": {"environment": self.config}}}

    def usage_of(response: Any) -> dict[str, Any]:
        if not isinstance(response, dict):
            return {}
        usage = response.get("usage") or {}
        return {
            "input_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
        }

    class Agent(DefaultAgent):
        def query(self) -> dict:
            answer = ask({"type": "query", "calls": self.n_calls})
            if answer.get("stop"):
                raise LimitsExceeded(
                    {
                        "role": "exit",
                        "content": "LimitsExceeded",
                        "extra": {
                            "exit_status": "LimitsExceeded",
                            "submission": "",
                            "budget": answer["stop"],
                        },
                    }
                )
            started = time.monotonic()
            try:
                message = super().query()
            except FormatError as error:
                extra = error.messages[0].get("extra", {})
                send(
                    {
                        "type": "step",
                        "content": "",
                        "format_error": str(error.messages[0].get("content", ""))[:4000],
                        "cost": extra.get("cost"),
                        "seconds": time.monotonic() - started,
                        **usage_of(extra.get("response")),
                    }
                )
                raise
            extra = message.get("extra", {})
            send(
                {
                    "type": "step",
                    "content": message.get("content") or "",
                    "cost": extra.get("cost"),
                    "seconds": time.monotonic() - started,
                    **usage_of(extra.get("response")),
                }
            )
            return message

    model_settings = dict(settings["model"])
    model_settings["model_kwargs"] = {
        **model_settings.get("model_kwargs", {}),
        "api_key": os.environ.get("EVALREPRO_MODEL_API_KEY") or "none",
    }
    model = LitellmModel(**model_settings)
    agent = Agent(model, SandboxEnvironment(), **settings["agent"])
    try:
        result = agent.run(settings["task"])
    except Exception as error:  # the loop's own failure, told to the harness by kind
        send(
            {
                "type": "end",
                "exit_status": type(error).__name__,
                "error": str(error)[:2000],
                "transient": _transient(error),
            }
        )
        return 0
    send(
        {
            "type": "end",
            "exit_status": result.get("exit_status", ""),
            "budget": result.get("budget"),
        }
    )
    return 0


def _transient(error: Exception) -> bool:
    """Whether the model's service failed in a way that may pass (the endpoint cannot be
    reached, is overloaded or timed out): the harness's infrastructure, not the agent."""
    import litellm

    kinds = (
        litellm.exceptions.APIConnectionError,
        litellm.exceptions.Timeout,
        litellm.exceptions.RateLimitError,
        litellm.exceptions.ServiceUnavailableError,
        litellm.exceptions.InternalServerError,
    )
    return isinstance(error, kinds)


if __name__ == "__main__":
    raise SystemExit(main())
