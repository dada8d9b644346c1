"""Roles: trusted engine code around an LLM agent's turn.

An embedded agent reads what it needs itself; a model on the claude, codex or openai
harness gets it from the engine instead. A node whose worker id names a role (the
auto-research scouts, researcher and reviewer; the software-change reviewers, who get the
base revision, the diff and the check receipts) is run through its role: before the turn
the role writes a *brief* (context the prompt carries after the node's input) and may give
the agent a working directory of its own; after the turn it may settle the result from what
trusted code sees (the researcher's change is collected from its checkout). Roles are
looked up by worker id, like trusted code, so any graph using those workers gets them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.features import contributions
from zeroshot_kernel.harness.base import ExecutionRequest, Harness, HarnessResult


class RoleError(Refused):
    """The role cannot prepare this turn (damaged records, a parent that does not verify):
    the execution ends as a crash with this message, and no agent runs."""


@dataclass(frozen=True)
class Preparation:
    brief: str = ""
    checkout: Path | None = None
    """The agent's working directory instead of the workspace (``None``: the workspace)."""
    state: Any = None
    """What the role needs after the turn (fingerprints taken before it)."""
    granted_commands: tuple[str, ...] = ()
    """Commands a read-only agent may run (see ``ExecutionRequest.granted_commands``)."""


class Role(Protocol):
    def prepare(self, request: ExecutionRequest, *, tools: bool) -> Preparation:
        """Context for this turn; ``tools``: the agent can read and edit files itself."""
        ...

    def finish(
        self, request: ExecutionRequest, preparation: Preparation, result: HarnessResult
    ) -> HarnessResult:
        """The execution's result, settled by trusted code from what the turn left."""
        ...


def role_for(worker: str) -> Role | None:
    """The role the features register for ``worker`` (imported on first use), if any."""
    load = contributions("roles").get(worker)
    if load is None:
        return None
    role: Role = load()
    return role


class RoleHarness:
    """Runs ``inner`` (an LLM harness) through the role of each execution's worker."""

    def __init__(self, inner: Harness, *, tools: bool) -> None:
        self._inner = inner
        self._tools = tools

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        role = role_for(request.node.worker)
        if role is None:
            return await self._inner.execute(request)
        try:
            # Off the event loop: a brief may read a whole change or study (20,000 files),
            # and the controller's heartbeat must keep its lease meanwhile.
            preparation = await asyncio.to_thread(role.prepare, request, tools=self._tools)
        except RoleError as failed:
            return HarnessResult(
                error("crash"),
                f"the engine could not prepare the {request.node.name} turn: {failed}",
            )
        turn = replace(
            request,
            brief=preparation.brief,
            workspace=preparation.checkout or request.workspace,
            granted_commands=preparation.granted_commands,
        )
        result = await self._inner.execute(turn)
        return role.finish(request, preparation, result)

    async def close(self) -> None:
        await self._inner.close()


def claude_harness(*, in_process: bool = False) -> RoleHarness:
    """The claude CLI harness, its turns run through their roles (agents edit files)."""
    from zeroshot_kernel.harness.claude_harness import ClaudeHarness

    return RoleHarness(ClaudeHarness(), tools=True)


def codex_harness(*, in_process: bool = False) -> RoleHarness:
    """The codex CLI harness, its turns run through their roles (agents edit files)."""
    from zeroshot_kernel.harness.codex_harness import CodexHarness

    return RoleHarness(CodexHarness(), tools=True)


def openai_harness(*, in_process: bool = False) -> RoleHarness:
    """The OpenAI-compatible harness (imports httpx), its turns run through their roles
    (the model answers in text: no file tools)."""
    from zeroshot_kernel.harness.openai_harness import OpenAIHarness

    return RoleHarness(OpenAIHarness(), tools=False)
