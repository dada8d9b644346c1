"""What this machine can run: installed agent CLIs, satisfied connections, live checks.

Behind ``zeroshot providers``. Connections are reported by name and variable name only;
their values are read to decide "set or not" and, for ``check``, sent to their own
endpoint, never printed.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

from zeroshot_kernel import sandbox
from zeroshot_kernel.harness.agent_cli import (
    AgentCli,
    CliMissing,
    CliRun,
    child_env,
    cli_box,
    looks_like_auth_problem,
    run_cli,
)
from zeroshot_kernel.harness.claude_harness import CLAUDE
from zeroshot_kernel.harness.claude_harness import read_result as read_claude
from zeroshot_kernel.harness.codex_harness import CODEX
from zeroshot_kernel.harness.codex_harness import read_events as read_codex
from zeroshot_kernel.harness.conversation import Turn
from zeroshot_kernel.harness.openai_harness import base_url_of
from zeroshot_kernel.harness.plan import KNOWN_CONNECTIONS, Connection, RuntimePlan
from zeroshot_kernel.sandbox import Containment

CLIS: dict[str, AgentCli] = {"claude": CLAUDE, "codex": CODEX}
CLI_CREDENTIAL = {"claude": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}
CHECK_PROMPT = "This is a connectivity check. Reply with the single word: ok"
CLI_CHECK_TIMEOUT_S = 120.0
HTTP_CHECK_TIMEOUT_S = 20.0
NOT_OPENAI_COMPATIBLE = frozenset({"github", "anthropic"})


@dataclass(frozen=True)
class CliStatus:
    name: str
    env_var: str
    binary: str | None
    version: str | None
    egress: tuple[str, ...] = ()
    """The hosts its box may reach (``host:port``), as this environment sets them."""

    @property
    def installed(self) -> bool:
        return self.version is not None


@dataclass(frozen=True)
class ConnectionStatus:
    name: str
    env: str
    satisfied: bool
    base_url: str | None


@dataclass(frozen=True)
class CheckResult:
    provider: str
    ok: bool
    detail: str


async def cli_statuses() -> list[CliStatus]:
    versions = await asyncio.gather(*(cli.version() for cli in CLIS.values()))
    return [
        CliStatus(name, cli.env_var, cli.binary(), version, cli.egress(child_env(cli, {})))
        for (name, cli), version in zip(CLIS.items(), versions, strict=True)
    ]


def connections_of(plan: RuntimePlan | None) -> dict[str, Connection]:
    """The well-known connections plus the plan's own (which may override them)."""
    known = {name: Connection(env=env) for name, env in KNOWN_CONNECTIONS.items()}
    return {**known, **(plan.connections if plan is not None else {})}


def connection_statuses(plan: RuntimePlan | None = None) -> list[ConnectionStatus]:
    statuses = []
    for name, connection in sorted(connections_of(plan).items()):
        openai_style = name not in NOT_OPENAI_COMPATIBLE
        statuses.append(
            ConnectionStatus(
                name=name,
                env=connection.env,
                satisfied=bool(os.environ.get(connection.env)),
                base_url=base_url_of(name, connection) if openai_style else connection.base_url,
            )
        )
    return statuses


async def check_all(plan: RuntimePlan | None = None) -> list[CheckResult]:
    """One tiny request per configured provider: each installed agent CLI, and each
    satisfied OpenAI-compatible connection (``GET {base}/models``)."""
    checks = [check_cli(status) for status in await cli_statuses() if status.installed]
    connections = connections_of(plan)
    checks += [
        check_endpoint(status.name, status.base_url, os.environ[connections[status.name].env])
        for status in connection_statuses(plan)
        if status.satisfied and status.base_url and status.name not in NOT_OPENAI_COMPATIBLE
    ]
    return list(await asyncio.gather(*checks))


async def check_cli(status: CliStatus) -> CheckResult:
    assert status.binary is not None
    if status.name == "claude":
        arguments = ["-p", "--output-format", "json", "--max-turns", "1"]
    else:
        arguments = ["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"]
    credential = CLI_CREDENTIAL[status.name]
    values = {credential: os.environ[credential]} if os.environ.get(credential) else {}
    # Boxed where a box can be made; the prompt is ours, so no box is no reason to refuse.
    containment = Containment("bwrap" if sandbox.problem() is None else "none")
    with tempfile.TemporaryDirectory(prefix="zeroshot-check-") as folder:
        env = child_env(CLIS[status.name], values)
        try:
            with cli_box(CLIS[status.name], Path(folder), containment, env, writable=True) as box:
                finished = await asyncio.wait_for(
                    run_cli(
                        [status.binary, *arguments],
                        stdin=CHECK_PROMPT,
                        box=box,
                        log=lambda stream, line: None,
                    ),
                    CLI_CHECK_TIMEOUT_S,
                )
        except CliMissing:
            return CheckResult(status.name, False, CLIS[status.name].missing_detail())
        except TimeoutError:
            return CheckResult(status.name, False, f"no answer within {CLI_CHECK_TIMEOUT_S:g} s")
    return _cli_verdict(status.name, finished)


def _cli_verdict(name: str, finished: CliRun) -> CheckResult:
    turn: Turn[str] = read_claude(finished) if name == "claude" else read_codex(finished)
    if turn.failure is not None:
        return CheckResult(name, False, turn.failure.detail or "failed")
    usage = turn.usage
    tokens = ""
    if usage is not None and usage.input_tokens is not None:
        tokens = f" ({usage.input_tokens} in / {usage.output_tokens} out tokens)"
    return CheckResult(name, True, f"answered{tokens}")


async def check_endpoint(name: str, base_url: str, key: str) -> CheckResult:
    url = f"{base_url}/models"
    try:
        async with httpx.AsyncClient(timeout=HTTP_CHECK_TIMEOUT_S, trust_env=False) as client:
            response = await client.get(url, headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError as failure:
        return CheckResult(name, False, f"{base_url}: {type(failure).__name__}")
    if response.status_code in (401, 403) or (
        response.status_code >= 400 and looks_like_auth_problem(response.text[:200])
    ):
        return CheckResult(
            name, False, f"{base_url}: the key was refused (HTTP {response.status_code})"
        )
    if response.status_code >= 400:
        return CheckResult(name, False, f"{base_url}: HTTP {response.status_code}")
    try:
        models = response.json().get("data", [])
    except (ValueError, AttributeError):
        models = []
    count = len(models) if isinstance(models, list) else 0
    return CheckResult(name, True, f"{base_url}: {count} model(s)")
