"""The ``local`` harness: built-in, non-LLM agents named by ``binding.agent``.

Each embedded agent is a Python function run in a pooled worker process (so a timeout or a
stop kills it), given the node's input plus engine context computed here, in the
controller, from the run's recorded events (for research: the round, and whether the
researcher must reconsider). The recorded ``node_started`` input stays the graph's own.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.harness.python_harness import PythonHarness


@dataclass(frozen=True)
class EmbeddedAgent:
    """Where an agent lives, and how its engine context is computed."""

    callable: str
    context: str
    """``module:function(request) -> dict`` run in the controller before each call."""


_RESEARCH = "zeroshot_kernel.research.local_agents"
EMBEDDED_AGENTS: dict[str, EmbeddedAgent] = {
    **{
        f"research.scout.{strategy}": EmbeddedAgent(
            f"{_RESEARCH}:scout_{strategy}", f"{_RESEARCH}:engine_context"
        )
        for strategy in ("exploration", "synthesis", "challenge")
    },
    "research.researcher": EmbeddedAgent(f"{_RESEARCH}:researcher", f"{_RESEARCH}:engine_context"),
    "research.reviewer": EmbeddedAgent(f"{_RESEARCH}:reviewer", f"{_RESEARCH}:engine_context"),
}


def _load(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


async def run_embedded(
    python: PythonHarness, request: ExecutionRequest, embedded: EmbeddedAgent
) -> HarnessResult:
    """Call ``embedded`` in a worker with ``{"input": <graph input>, "engine": <context>}``."""
    context = _load(embedded.context)(request)
    call = dataclasses.replace(
        request,
        input={"input": request.input, "engine": context},
        binding=AgentBinding(harness="python", callable=embedded.callable),
    )
    return await python.execute(call)


class LocalHarness:
    """Runs embedded agents in killable worker processes."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._python = PythonHarness(in_process=in_process)

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binding = request.binding
        name = binding.agent if isinstance(binding, AgentBinding) else None
        agent = EMBEDDED_AGENTS.get(name or "")
        if agent is None:
            return HarnessResult(error("refusal"), f"no embedded agent named {name!r}")
        return await run_embedded(self._python, request, agent)

    async def close(self) -> None:
        await self._python.close()
