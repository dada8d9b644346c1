"""The ``local`` harness: built-in, non-LLM agents named by ``binding.agent``.

Each embedded agent is a Python function run in a pooled worker process (so a timeout or a
stop kills it), given the node's input plus engine context computed here, in the
controller, from the run's recorded events (for research: the round, and whether the
researcher must reconsider). The recorded ``node_started`` input stays the graph's own.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.features import EmbeddedCode, contributions
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.harness.python_harness import PythonHarness

log = logging.getLogger(__name__)


def embedded_agents() -> dict[str, EmbeddedCode]:
    """Agent name -> its code, as the installed features register them."""
    return contributions("embedded_agents")


class EmbeddedCalls:
    """Calls embedded code in pooled worker processes with its engine context; once
    closed (its controller ended), lets go of what those contexts held for the run."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._python = PythonHarness(in_process=in_process)
        self._to_release: dict[tuple[Callable[[str], None], str], None] = {}

    async def call(self, request: ExecutionRequest, embedded: EmbeddedCode) -> HarnessResult:
        """Call ``embedded`` with ``{"input": <graph input>, "engine": <context>}``; a
        context that refuses (a precondition of the run's own) makes a ``refusal``."""
        if embedded.release is not None:
            self._to_release[(embedded.release, request.run_id)] = None
        try:
            context = embedded.context(request)
        except Refused as refused:
            return HarnessResult(error("refusal"), str(refused))
        call = dataclasses.replace(
            request,
            input={"input": request.input, "engine": context},
            binding=AgentBinding(harness="python", callable=embedded.run),
        )
        return await self._python.execute(call)

    async def close(self) -> None:
        """Let go first (the controller stopped every execution before closing its
        harnesses, so no worker still acts for the run), then stop the pooled workers."""
        for release, run_id in self._to_release:
            try:
                release(run_id)
            except Exception:  # one failing release must not keep the others held
                log.exception("releasing %s for %s failed", release, run_id)
        self._to_release.clear()
        await self._python.close()


class LocalHarness:
    """Runs embedded agents in killable worker processes."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._calls = EmbeddedCalls(in_process=in_process)

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binding = request.binding
        name = binding.agent if isinstance(binding, AgentBinding) else None
        agent = embedded_agents().get(name or "")
        if agent is None:
            return HarnessResult(error("refusal"), f"no embedded agent named {name!r}")
        return await self._calls.call(request, agent)

    async def close(self) -> None:
        await self._calls.close()
