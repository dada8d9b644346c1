"""The ``trusted`` harness: nodes run by trusted code of the engine, never by an agent.

A trusted node is bound as ``{"kind": "trusted", "code": NAME}``; ``NAME`` picks one entry
of :func:`trusted_code` (registered by the features), which also names the only worker id it
serves, so that neither the graph nor the plan can point trusted code at another node, or an
agent at a trusted node (admission checks both ways). Like the embedded agents, the code
runs in a pooled, killable worker process, with engine context computed here from the run's
events."""

from __future__ import annotations

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.features import EmbeddedCode, contributions
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.local_harness import EmbeddedCalls
from zeroshot_kernel.harness.plan import TrustedBinding


def trusted_code() -> dict[str, EmbeddedCode]:
    """Trusted code name -> its code, as the installed features register them."""
    return {
        name: code
        for name, code in contributions("trusted_code").items()
        if code.worker is not None
    }


def trusted_workers() -> dict[str, str]:
    """Worker id -> the name of the trusted code that must run it."""
    return {code.worker: name for name, code in trusted_code().items() if code.worker}


class TrustedHarness:
    """Runs trusted engine code in killable worker processes."""

    def __init__(self, *, in_process: bool = False) -> None:
        self._calls = EmbeddedCalls(in_process=in_process)

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        binding = request.binding
        name = binding.code if isinstance(binding, TrustedBinding) else ""
        entry = trusted_code().get(name)
        if entry is None or entry.worker != request.node.worker:
            return HarnessResult(
                error("refusal"), f"no trusted code {name!r} for worker {request.node.worker}"
            )
        return await self._calls.call(request, entry)

    async def close(self) -> None:
        await self._calls.close()
