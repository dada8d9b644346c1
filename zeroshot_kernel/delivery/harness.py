"""The ``git_delivery`` harness: trusted code (never an agent) behind a delivery node.

It answers as the verifier ``zeroshot.git-delivery.push@1`` (auto-research): signal
``delivery`` is ``published``, ``skipped`` or ``repair_requested``; and as the
software-change deliveries ``builtin.git-delivery.{push,pr,merge}@1`` (see
:mod:`zeroshot_kernel.delivery.change_delivery`). A workspace that cannot deliver (not a
repository, no remote, remote unreachable) is a refusal with the reason, which the graph
turns into ``delivery_failed``; an unexpected git failure is a crash (retried if the node
has attempts left: a retried delivery never commits twice).
"""

from __future__ import annotations

from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.contract.outcome import VerifierOutcome, error
from zeroshot_kernel.delivery.change_delivery import deliver_change, receipt, unsettled
from zeroshot_kernel.delivery.git import Git, GitError
from zeroshot_kernel.delivery.push_delivery import deliver
from zeroshot_kernel.delivery.worktree import (
    DeliveryRefused,
    Remote,
    RunWorktree,
    open_repository,
)
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.research.studies import study_of

SIGNAL = "delivery"
CHANGE_DELIVERY_PREFIX = "builtin.git-delivery."


class GitDeliveryHarness:
    """Runs delivery in the controller's process: it only drives git subprocesses."""

    async def execute(self, request: ExecutionRequest) -> HarnessResult:
        if isinstance(request.node, VerifierNode) and \
                request.node.worker.startswith(CHANGE_DELIVERY_PREFIX):
            return await _change(request)
        task = (request.run_input or {}).get("task") if isinstance(request.run_input, dict) \
            else None
        if not isinstance(request.node, VerifierNode) or not isinstance(task, str):
            return HarnessResult(error("refusal"), "git delivery serves the deliver verifier "
                                                   "of an auto-research run (input task)")
        try:
            delivered = await deliver(
                workspace=request.workspace.resolve(), run_id=request.run_id, task=task,
                study=study_of(request.run_input),
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


async def _change(request: ExecutionRequest) -> HarnessResult:
    """A software-change delivery, from the run's own worktree (the workspace)."""
    payload = request.input if isinstance(request.input, dict) else {}
    delivery, task = payload.get("delivery"), payload.get("task", "")
    if not isinstance(delivery, dict):
        return HarnessResult(error("refusal"), "software-change delivery needs its input "
                                               "{task, delivery}")
    late = unsettled(request.events(), request.execution)
    if late:
        message = (f"delivery started while {', '.join(late)} had not settled; its receipt "
                   "cannot certify the delivered state")
        return HarnessResult(VerifierOutcome(
            status="verifier", output={"receipt": receipt(delivery, "", "", 0, delivery["mode"],
                                                          "unconfirmed")},
            signals={SIGNAL: "unconfirmed"}, diagnostic={"message": message}), message)
    try:
        repository = await open_repository(request.workspace.resolve())
        git = Git(repository.root, repository.git.env)
        branch = await git("symbolic-ref", "-q", "--short", "HEAD", check=False)
        url = await git("remote", "get-url", delivery["remote"], check=False)
        if not branch or not url:
            raise DeliveryRefused(f"the run's worktree {repository.root} has no branch or no "
                                  f"remote {delivery['remote']!r}")
        delivered = await deliver_change(
            worktree=RunWorktree(repository.root, branch, git),
            remote=Remote(delivery["remote"], url), run_id=request.run_id, task=str(task),
            delivery=delivery, token=request.env.get("GH_TOKEN", ""),
            log=lambda line: request.log("output", line))
    except DeliveryRefused as refused:
        return HarnessResult(error("refusal"), str(refused))
    except GitError as failed:
        return HarnessResult(error("crash"), f"{failed}\n{failed.stderr}".strip())
    outcome = VerifierOutcome(status="verifier", output={"receipt": delivered.receipt},
                              signals={SIGNAL: delivered.signal},
                              diagnostic={"message": delivered.message})
    request.log("output", f"delivery {delivered.signal}: {delivered.receipt}")
    return HarnessResult(outcome, delivered.message or None)
