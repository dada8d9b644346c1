"""The ``codex`` harness: ``codex exec --json``, one invocation per turn.

Codex reads the prompt on stdin and streams JSON Lines events on stdout:
``thread.started`` (the ``thread_id`` to resume), ``turn.started``, ``item.*`` (the final
``agent_message`` item carries the reply text), then ``turn.completed`` (with token
usage) or ``turn.failed`` / ``error``. Correction turns and ``node_instance`` sessions
continue the thread with ``codex exec resume THREAD_ID``. A turn that ends in a terminal
error event is sent one ``Continue`` on its thread before it counts as a crash. Verifiers
run in the ``read-only`` sandbox, steps in ``workspace-write``.

Provider ``openai`` (the default) uses the CLI's login or ``OPENAI_API_KEY`` when the
node declares the ``openai`` connection; provider ``openrouter`` needs the
``openrouter`` connection.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.harness.agent_cli import (
    AgentCli,
    CliMissing,
    CliRun,
    agent_box,
    agent_env,
    auth_refusal,
    box_refusal,
    crash,
    effort_of,
    looks_like_auth_problem,
    missing_cli,
    model_of,
    provider_of,
    run_cli,
)
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.conversation import Turn, add_usage, converse
from zeroshot_kernel.harness.sessions import SessionPool
from zeroshot_kernel.ledger.events import Usage
from zeroshot_kernel.sandbox import SandboxUnavailable

CODEX = AgentCli(
    name="codex",
    env_var="ZEROSHOT_CODEX_BIN",
    config_env_names=("CODEX_HOME",),
    config_dir_env="CODEX_HOME",
    config_paths=(".codex",),
    # The API, and ChatGPT's backend and sign-in for a CLI logged in with ChatGPT.
    api_hosts=("api.openai.com", "chatgpt.com", "auth.openai.com"),
    base_url_envs=("OPENAI_BASE_URL",),
)
OPENROUTER_URL = "https://openrouter.ai/api/v1"
CONTINUE = "Continue"
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}

LOGIN_HINT = (
    "codex is not authenticated (log the CLI in, or add the 'openai' connection, "
    "OPENAI_API_KEY, to the node): "
)


class CodexHarness:
    """Runs executions through the Codex CLI."""

    def __init__(self) -> None:
        self._sessions: SessionPool[str] = SessionPool()

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binary = CODEX.binary()
        if binary is None:
            return missing_cli(CODEX)
        provider, problem = _provider_arguments(request)
        if problem is not None:
            return problem
        env = agent_env(request, CODEX)

        async def invoke(prompt: str, session: str | None) -> tuple[Turn[str], bool]:
            argv = [binary, *codex_arguments(request, session, provider.arguments)]
            try:
                with agent_box(request, CODEX, env, provider.urls) as box:
                    finished = await run_cli(argv, stdin=prompt, box=box, log=request.log)
            except CliMissing:
                return Turn(failure=missing_cli(CODEX)), False
            except SandboxUnavailable as unavailable:
                return Turn(failure=box_refusal(unavailable)), False
            return read_stream(finished)

        async def send(prompt: str, session: str | None) -> Turn[str]:
            turn, terminal_error = await invoke(prompt, session)
            if not terminal_error or turn.session is None:
                return turn
            # One "Continue" on the same thread after a terminal error, as the reference
            # harness does; a second failure stands.
            request.log("system", "codex ended its turn with an error; sending Continue")
            again, _ = await invoke(CONTINUE, turn.session)
            return Turn(
                again.text,
                again.failure,
                add_usage(turn.usage, again.usage),
                again.session or turn.session,
            )

        conversation = await converse(request, send, self._sessions.take(request))
        self._sessions.keep(request, conversation.session)
        return conversation.result

    async def close(self) -> None:
        self._sessions.clear()


def codex_arguments(
    request: ExecutionRequest, session: str | None, provider: list[str] | None = None
) -> list[str]:
    """The command line after the binary (the prompt goes on stdin)."""
    sandbox = "read-only" if isinstance(request.node, VerifierNode) else "workspace-write"
    arguments = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--cd",
        str(request.workspace),
        "--sandbox",
        sandbox,
    ]
    model = (model_of(request) or "").strip()
    if model:  # none: the CLI's own configured default
        arguments += ["--model", model]
    effort = effort_of(request)
    if effort:
        arguments += ["-c", f"model_reasoning_effort={_EFFORTS[effort]}"]
    arguments += provider or []
    if session is not None:
        arguments += ["resume", session]
    return arguments


@dataclass(frozen=True)
class _Provider:
    arguments: list[str]
    """What points codex at the provider (none for OpenAI itself)."""
    urls: list[str]
    """Where it is: hosts its box may reach."""


def _provider_arguments(request: ExecutionRequest) -> tuple[_Provider, HarnessResult | None]:
    if provider_of(request, "openai") != "openrouter":
        return _Provider([], []), None
    connection = request.plan.connection("openrouter")
    if connection is None or not request.env.get(connection.env):
        return _Provider([], []), auth_refusal(
            "provider openrouter needs the 'openrouter' connection (OPENROUTER_API_KEY); "
            "add it to the node's connections and set it in the environment"
        )
    base = connection.base_url or OPENROUTER_URL
    settings = {"name": "OpenRouter", "base_url": base, "env_key": connection.env}
    arguments = ["-c", "model_provider=openrouter"]
    for key, value in settings.items():
        arguments += ["-c", f"model_providers.openrouter.{key}={json.dumps(value)}"]
    return _Provider(arguments, [base]), None


@dataclass
class _Stream:
    thread: str | None = None
    message: str | None = None
    usage: Usage | None = None
    failure: str | None = None
    recoverable: bool = False
    """Whether ``failure`` came from an ``error`` event a later completed turn got past."""
    unparsed: str | None = None


def read_events(finished: CliRun) -> Turn[str]:
    """One invocation's outcome from its JSON Lines event stream."""
    return read_stream(finished)[0]


def read_stream(finished: CliRun) -> tuple[Turn[str], bool]:
    """The outcome, and whether it is a crash reported by a terminal error event (a turn
    worth one ``Continue``)."""
    stream = _Stream()
    for line in finished.stdout:
        if line.strip():
            _read_event(stream, line)
    stderr = finished.stderr_text()
    if stream.failure is not None or finished.returncode != 0:
        message = stream.failure or stderr or f"exit code {finished.returncode}"
        if looks_like_auth_problem(message, stderr):
            return Turn(failure=auth_refusal(LOGIN_HINT + message), usage=stream.usage), False
        code = f" (exit code {finished.returncode})" if finished.returncode != 0 else ""
        failed = Turn(
            failure=crash(f"codex failed{code}: {message}"),
            usage=stream.usage,
            session=stream.thread,
        )
        return failed, stream.failure is not None
    if stream.unparsed is not None:
        return Turn(
            failure=crash(
                f"codex printed a line that is not a JSON event: {stream.unparsed[:200]!r}"
            ),
            usage=stream.usage,
        ), False
    if stream.message is None:
        return Turn(
            failure=crash("codex ended its turn without an agent message"), usage=stream.usage
        ), False
    return Turn(text=stream.message, usage=stream.usage, session=stream.thread), False


def _read_event(stream: _Stream, line: str) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        stream.unparsed = stream.unparsed or line
        return
    if not isinstance(event, dict):
        stream.unparsed = stream.unparsed or line
        return
    kind = event.get("type")
    if kind in ("thread.started", "thread.resumed") and isinstance(event.get("thread_id"), str):
        stream.thread = event["thread_id"]
    elif kind == "item.completed" and isinstance(item := event.get("item"), dict):
        item_kind = item.get("type", item.get("item_type"))
        if item_kind in ("agent_message", "assistant_message") and isinstance(
            item.get("text"), str
        ):
            stream.message = item["text"]
    elif kind == "turn.completed":
        stream.usage = _usage(event.get("usage"))
        if stream.recoverable:
            stream.failure, stream.recoverable = None, False
    elif kind == "turn.failed":
        stream.failure, stream.recoverable = _message(event.get("error")) or "turn failed", False
    elif kind == "error" and stream.failure is None:
        stream.failure, stream.recoverable = _message(event) or "stream error", True


def _message(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return None


def _usage(reported: Any) -> Usage | None:
    if not isinstance(reported, dict):
        return None
    inputs = reported.get("input_tokens")
    outputs = reported.get("output_tokens")
    return Usage(
        input_tokens=inputs if isinstance(inputs, int) else None,
        output_tokens=outputs if isinstance(outputs, int) else None,
    )
