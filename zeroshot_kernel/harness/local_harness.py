"""The ``local`` harness: built-in, non-LLM agents named by ``binding.agent``.

Each embedded agent is a Python function run in a pooled worker process (so a timeout or a
stop kills it), given the node's input plus engine context computed here, in the
controller, from the run's recorded events (for research: the round, and whether the
researcher must reconsider). The recorded ``node_started`` input stays the graph's own.
"""

from __future__ import annotations

import dataclasses

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.features import EmbeddedCode, contributions, resolve
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.harness.python_harness import PythonHarness


def embedded_agents() -> dict[str, EmbeddedCode]:
    """Agent name -> its code, as the installed features register them."""
    return contributions("embedded_agents")


async def run_embedded(
    python: PythonHarness, request: ExecutionRequest, embedded: EmbeddedCode
) -> HarnessResult:
    """Call ``embedded`` in a worker with ``{"input": <graph input>, "engine": <context>}``."""
    context = resolve(embedded.context)(request)
    call = dataclasses.replace(
        request,
        input={"input": request.input, "engine": context},
        binding=AgentBinding(harness="python", callable=embedded.run),
    )
    return await python.execute(call)


class LocalHarness:
    """Runs embedded agents in killable worker processes."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._python = PythonHarness(in_process=in_process)

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binding = request.binding
        name = binding.agent if isinstance(binding, AgentBinding) else None
        agent = embedded_agents().get(name or "")
        if agent is None:
            return HarnessResult(error("refusal"), f"no embedded agent named {name!r}")
        return await run_embedded(self._python, request, agent)

    async def close(self) -> None:
        await self._python.close()
