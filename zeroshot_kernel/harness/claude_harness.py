"""The ``claude`` harness: Claude Code in print mode, one invocation per turn.

``claude -p --output-format json`` reads the prompt on stdin and prints one JSON result
object (``type: result``, ``is_error``, ``result``, ``session_id``, ``usage``,
``total_cost_usd``). Correction turns and ``node_instance`` sessions continue the same
conversation with ``--resume SESSION_ID``. Verifiers run with read-only tools only
(``--permission-mode dontAsk`` denies everything not in ``--allowedTools``): reading files,
read-only git (``git diff``, ``log``, ``show``, ``status``) and the run's declared checks
(a software change's ``--check`` commands). Steps accept edits and run commands, but git
commands that would commit, publish, move branches or change the repository's config are
denied (``--disallowedTools``): trusted delivery does that.

Provider ``anthropic`` (the default) uses whatever the CLI is logged in with, or
``ANTHROPIC_API_KEY`` when the node declares the ``anthropic`` connection; provider
``openrouter`` needs the ``openrouter`` connection and points the CLI at OpenRouter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.contract.outcome import error
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
from zeroshot_kernel.harness.conversation import Turn, converse
from zeroshot_kernel.harness.sessions import SessionPool
from zeroshot_kernel.ledger.events import Usage
from zeroshot_kernel.sandbox import SandboxUnavailable

CLAUDE = AgentCli(
    name="claude",
    env_var="ZEROSHOT_CLAUDE_BIN",
    config_env_names=("CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL"),
    config_dir_env="CLAUDE_CONFIG_DIR",
    config_paths=(".claude", ".claude.json"),
    # The API, claude.ai (WebFetch's domain check) and statsig (feature flags), as Claude
    # Code's network requirements list them; not sentry.io, a public upload service.
    api_hosts=("api.anthropic.com", "claude.ai", "statsig.anthropic.com"),
    base_url_envs=("ANTHROPIC_BASE_URL",),
)
SANDBOX_SETTINGS = json.dumps({"sandbox": {"enabled": True}}, separators=(",", ":"))
"""Claude Code's own sandbox for the commands it runs, inside the workbench's box."""
READ_ONLY_TOOLS = "Read,Grep,Glob"
GIT_READ_TOOLS = ("Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)", "Bash(git status:*)")
"""What a claude verifier may run besides reading files: git commands that change nothing."""
WRITER_TOOLS = "Read,Grep,Glob,Edit,Write,Bash"
WRITER_DENIED_TOOLS = ",".join(
    f"Bash(git {command}:*)"
    for command in (
        "commit",
        "push",
        "reset",
        "checkout",
        "branch",
        "tag",
        "remote",
        "config",
        "rebase",
        "merge",
    )
)
"""Git commands a writing agent may not run (delivery commits and publishes its work)."""
OPENROUTER_ANTHROPIC_URL = "https://openrouter.ai/api"

LOGIN_HINT = (
    "claude is not authenticated (log the CLI in, or add the 'anthropic' connection, "
    "ANTHROPIC_API_KEY, to the node): "
)


class ClaudeHarness:
    """Runs executions through the Claude Code CLI."""

    def __init__(self) -> None:
        self._sessions: SessionPool[str] = SessionPool()

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binary = CLAUDE.binary()
        if binary is None:
            return missing_cli(CLAUDE)
        extra, problem = _provider_env(request)
        if problem is not None:
            return problem
        env = agent_env(request, CLAUDE, extra)

        async def send(prompt: str, session: str | None) -> Turn[str]:
            argv = [binary, *claude_arguments(request, session)]
            try:
                with agent_box(request, CLAUDE, env) as box:
                    finished = await run_cli(argv, stdin=prompt, box=box, log=request.log)
            except CliMissing:
                return Turn(failure=missing_cli(CLAUDE))
            except SandboxUnavailable as unavailable:
                return Turn(failure=box_refusal(unavailable))
            return read_result(finished)

        conversation = await converse(request, send, self._sessions.take(request))
        self._sessions.keep(request, conversation.session)
        return conversation.result

    async def close(self) -> None:
        self._sessions.clear()


def claude_arguments(request: ExecutionRequest, session: str | None) -> list[str]:
    """The command line after the binary (the prompt goes on stdin)."""
    arguments = ["-p", "--output-format", "json", "--settings", SANDBOX_SETTINGS]
    model = model_of(request)
    if model:
        arguments += ["--model", model]
    effort = effort_of(request)
    if effort and not (model and "haiku" in model):  # haiku has no effort setting
        arguments += ["--effort", effort]
    if isinstance(request.node, VerifierNode):
        arguments += ["--permission-mode", "dontAsk", "--allowedTools", verifier_tools(request)]
    else:
        arguments += [
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            WRITER_TOOLS,
            "--disallowedTools",
            WRITER_DENIED_TOOLS,
        ]
    if session is not None:
        arguments += ["--resume", session]
    return arguments


def verifier_tools(request: ExecutionRequest) -> str:
    """A verifier's tools: read files, read-only git, and the commands its role grants
    (a software-change reviewer's declared checks), each as a ``Bash(command:*)`` rule."""
    return ",".join([READ_ONLY_TOOLS, *GIT_READ_TOOLS, *command_rules(request.granted_commands)])


def command_rules(commands: Sequence[str]) -> list[str]:
    """``Bash(<command>:*)`` for each command a permission rule can name (one line, no
    parentheses or commas, which the rule list itself uses)."""
    return [
        f"Bash({command}:*)" for command in commands if not any(c in command for c in "(),\n\r")
    ]


def _provider_env(request: ExecutionRequest) -> tuple[dict[str, str], HarnessResult | None]:
    provider = provider_of(request, "anthropic")
    if provider != "openrouter":
        return {}, None
    connection = request.plan.connection("openrouter")
    key = request.env.get(connection.env) if connection else None
    if not key:
        return {}, auth_refusal(
            "provider openrouter needs the 'openrouter' connection (OPENROUTER_API_KEY); "
            "add it to the node's connections and set it in the environment"
        )
    base = (connection.base_url if connection else None) or OPENROUTER_ANTHROPIC_URL
    return {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": key, "ANTHROPIC_API_KEY": ""}, None


def read_result(finished: CliRun) -> Turn[str]:
    """One invocation's outcome from its JSON result object."""
    document = _result_object(finished.stdout)
    if document is None:
        stderr = finished.stderr_text()
        if looks_like_auth_problem(stderr, *finished.stdout[-3:]):
            return Turn(failure=auth_refusal(LOGIN_HINT + stderr))
        if finished.returncode != 0:
            return Turn(failure=crash(f"claude exited with code {finished.returncode}: {stderr}"))
        return Turn(failure=crash("claude printed no JSON result object"))
    session = document.get("session_id")
    session = session if isinstance(session, str) and session else None
    usage = _usage(document)
    text = document.get("result")
    failed = (
        bool(document.get("is_error"))
        or finished.returncode != 0
        or (document.get("subtype") not in (None, "success"))
    )
    if failed:
        message = text if isinstance(text, str) else str(document.get("subtype"))
        if looks_like_auth_problem(message, finished.stderr_text()):
            return Turn(failure=auth_refusal(LOGIN_HINT + message), usage=usage)
        return Turn(
            failure=crash(f"claude reported an error ({document.get('subtype')}): {message}"),
            usage=usage,
        )
    if document.get("stop_reason") == "refusal":
        return Turn(
            failure=HarnessResult(error("refusal", "policy_denied"), "the model refused"),
            usage=usage,
        )
    if not isinstance(text, str):
        return Turn(failure=crash("claude's result object has no result text"), usage=usage)
    return Turn(text=text, usage=usage, session=session)


def _result_object(lines: list[str]) -> dict[str, Any] | None:
    """The last line that is a JSON ``result`` object (or the whole stdout as one)."""
    candidates = [*reversed(lines), "\n".join(lines)]
    for candidate in candidates:
        candidate = candidate.strip()
        if not candidate.startswith("{"):
            continue
        try:
            document = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(document, dict) and document.get("type") == "result":
            return document
    return None


def _usage(document: dict[str, Any]) -> Usage | None:
    reported = document.get("usage")
    cost = document.get("total_cost_usd")
    cost = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    if not isinstance(reported, dict):
        return Usage(cost_usd=cost) if cost is not None else None
    counts = [
        reported.get(name)
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    inputs = [c for c in counts if isinstance(c, int)]
    output = reported.get("output_tokens")
    return Usage(
        input_tokens=sum(inputs) if inputs else None,
        output_tokens=output if isinstance(output, int) else None,
        cost_usd=cost,
    )
