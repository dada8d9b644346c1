"""The ``git_delivery`` harness: trusted code (never an agent) behind a delivery node.

It answers as the verifier ``zeroshot.git-delivery.push@1``: signal ``delivery`` is
``published``, ``skipped`` or ``repair_requested``. A workspace that cannot deliver (not a
repository, no remote, remote unreachable) is a refusal with the reason, which the graph
turns into ``delivery_failed``; an unexpected git failure is a crash (retried if the node
has attempts left: a retried delivery never commits twice).
"""

from __future__ import annotations

from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.contract.outcome import VerifierOutcome, error
from zeroshot_kernel.delivery.git import GitError
from zeroshot_kernel.delivery.push_delivery import deliver
from zeroshot_kernel.delivery.worktree import DeliveryRefused
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult

SIGNAL = "delivery"


class GitDeliveryHarness:
    """Runs delivery in the controller's process: it only drives git subprocesses."""

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        task = (request.run_input or {}).get("task") if isinstance(request.run_input, dict) \
            else None
        if not isinstance(request.node, VerifierNode) or not isinstance(task, str):
            return HarnessResult(error("refusal"), "git delivery serves the deliver verifier "
                                                   "of an auto-research run (input task)")
        try:
            delivered = await deliver(
                workspace=request.workspace.resolve(), run_id=request.run_id, task=task,
                payload=request.input, log=lambda line: request.log("output", line),
            )
        except DeliveryRefused as refused:
            return HarnessResult(error("refusal"), str(refused))
        except GitError as failed:
            return HarnessResult(error("crash"), f"{failed}\n{failed.stderr}".strip())
        outcome = VerifierOutcome(status="verifier", output=None,
                                  signals={SIGNAL: delivered.signal}, diagnostic=None)
        return HarnessResult(outcome, delivered.detail)

    async def close(self) -> None:
        """Nothing is pooled: every git process ends with its call."""
