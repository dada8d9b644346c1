"""The ``git_delivery`` harness: trusted code (never an agent) behind a delivery node.

Features register the delivery each worker id gets (``Feature.deliveries``): auto-research
publishes a reviewed round (``zeroshot.git-delivery.push@1``), a software change pushes,
opens a pull request or ships (``builtin.git-delivery.{push,pr,merge}@1``). Each answers
with the signal ``delivery``; a workspace that cannot deliver (not a repository, no remote,
remote unreachable) is a refusal with the reason, which the graph turns into
``delivery_failed``; an unexpected git failure is a crash (retried if the node has attempts
left: a retried delivery never commits twice).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.delivery.git import GitError
from zeroshot_kernel.delivery.worktree import DeliveryRefused
from zeroshot_kernel.features import contributions
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult

SIGNAL = "delivery"
"""The signal every delivery node answers with."""

Delivery = Callable[[ExecutionRequest], Awaitable[HarnessResult]]


class GitDeliveryHarness:
    """Runs delivery in the controller's process: it only drives git subprocesses."""

    def __init__(self, *, in_process: bool = False) -> None:
        """``in_process`` is accepted like every harness's; delivery always runs here."""

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        load = contributions("deliveries").get(request.node.worker)
        if load is None:
            return HarnessResult(
                error("refusal"), f"no git delivery serves worker {request.node.worker}"
            )
        delivery: Delivery = load()
        try:
            return await delivery(request)
        except DeliveryRefused as refused:
            return HarnessResult(error("refusal"), str(refused))
        except GitError as failed:
            return HarnessResult(error("crash"), f"{failed}\n{failed.stderr}".strip())

    async def close(self) -> None:
        """Nothing is pooled: every git process ends with its call."""
