"""The ``trusted`` harness: nodes run by trusted code of the engine, never by an agent.

A trusted node is bound as ``{"kind": "trusted", "code": NAME}``; ``NAME`` picks one entry
of :data:`TRUSTED_CODE`, which also names the only worker id it serves, so that neither
the graph nor the plan can point trusted code at another node, or an agent at a trusted
node (admission checks both ways). Like the embedded agents, the code runs in a pooled,
killable worker process, with engine context computed here from the run's events.
"""

from __future__ import annotations

from dataclasses import dataclass

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.local_harness import EmbeddedAgent, run_embedded
from zeroshot_kernel.harness.plan import TrustedBinding
from zeroshot_kernel.harness.python_harness import PythonHarness


@dataclass(frozen=True)
class TrustedCode:
    worker: str
    """The worker id of the nodes this code serves (and the only one)."""
    code: EmbeddedAgent


_RESEARCH = "zeroshot_kernel.research.trusted_nodes"
TRUSTED_CODE: dict[str, TrustedCode] = {
    "research.measure": TrustedCode("zeroshot.research.measure@1", EmbeddedAgent(
        f"{_RESEARCH}:measure", f"{_RESEARCH}:engine_context")),
    "research.adopt": TrustedCode("zeroshot.research.adopt@1", EmbeddedAgent(
        f"{_RESEARCH}:adopt", f"{_RESEARCH}:engine_context")),
}
TRUSTED_WORKERS = {entry.worker: name for name, entry in TRUSTED_CODE.items()}
"""Worker id -> the trusted code that must run it."""


class TrustedHarness:
    """Runs trusted engine code in killable worker processes."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._python = PythonHarness(in_process=in_process)

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binding = request.binding
        name = binding.code if isinstance(binding, TrustedBinding) else ""
        entry = TRUSTED_CODE.get(name)
        if entry is None or entry.worker != request.node.worker:
            return HarnessResult(error("refusal"), f"no trusted code {name!r} for worker "
                                                   f"{request.node.worker}")
        return await run_embedded(self._python, request, entry.code)

    async def close(self) -> None:
        await self._python.close()
