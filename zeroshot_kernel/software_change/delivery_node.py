"""The software-change delivery nodes (``builtin.git-delivery.{push,pr,merge}@1``), served
by the ``git_delivery`` harness from the run's own worktree (its workspace).

A delivery checks the run's trust baseline again first (a resumed run too) and delivers
only after the ``trust_check`` node let it (trusted, or unproven but allowed: then its
receipt says ``unproven`` and why), and only the tree that check recorded in the ledger
(never the worktree's files, which a resumed run does not believe). A workspace that
cannot deliver is a refusal with the reason; an unexpected git failure is a crash (a
retried delivery never commits twice).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.contract.outcome import VerifierOutcome, error
from zeroshot_kernel.delivery.git import Git, GitError
from zeroshot_kernel.delivery.harness import SIGNAL
from zeroshot_kernel.delivery.worktree import (
    DeliveryRefused,
    Remote,
    RunWorktree,
    open_repository,
)
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.ledger.events import NodeCompleted
from zeroshot_kernel.software_change import trust
from zeroshot_kernel.software_change.delivery import deliver_change, receipt, unsettled


async def deliver_node(request: ExecutionRequest) -> HarnessResult:
    """A software-change delivery, from the run's own worktree (the workspace)."""
    payload = request.input if isinstance(request.input, dict) else {}
    delivery, task = payload.get("delivery"), payload.get("task", "")
    if not isinstance(delivery, dict):
        return HarnessResult(
            error("refusal"), "software-change delivery needs its input {task, delivery}"
        )
    late = unsettled(request.events(), request.execution)
    if late:
        message = (
            f"delivery started while {', '.join(late)} had not settled; its receipt "
            "cannot certify the delivered state"
        )
        return HarnessResult(
            VerifierOutcome(
                status="verifier",
                output={"receipt": receipt(delivery, "", "", 0, delivery["mode"], "unconfirmed")},
                signals={SIGNAL: "unconfirmed"},
                diagnostic={"message": message},
            ),
            message,
        )
    events = list(request.events())
    verdict = _trust_verdict(events)
    if verdict is None:
        return HarnessResult(error("refusal"), "delivery runs only after a passed trust check")
    if not verdict.tree:
        return HarnessResult(error("refusal"), "the trust check recorded no reviewed tree")
    baseline = request.run_input.get("trust") if isinstance(request.run_input, dict) else None
    token = request.env.get("GH_TOKEN") or os.environ.get("GH_TOKEN", "")
    try:
        problems = await asyncio.to_thread(
            trust.verify,
            request.workspace.resolve(),
            request.run_id,
            baseline or {},
            delivered=trust.delivered_heads(events),
            retried=True,
            token=token,
        )
    except trust.TrustError as failure:
        problems = [str(failure)]
    if problems:
        return HarnessResult(error("refusal"), "untrusted change: " + "; ".join(problems))
    try:
        repository = await open_repository(request.workspace.resolve())
        git = Git(repository.root, repository.git.env)
        branch = await git("symbolic-ref", "-q", "--short", "HEAD", check=False)
        url = await git("remote", "get-url", delivery["remote"], check=False)
        if not branch or not url:
            raise DeliveryRefused(
                f"the run's worktree {repository.root} has no branch or no "
                f"remote {delivery['remote']!r}"
            )
        delivered = await deliver_change(
            worktree=RunWorktree(repository.root, branch, git),
            remote=Remote(delivery["remote"], url),
            run_id=request.run_id,
            task=str(task),
            delivery=delivery,
            tree=verdict.tree,
            trust=baseline or {},
            token=request.env.get("GH_TOKEN", ""),
            log=lambda line: request.log("output", line),
        )
    except DeliveryRefused as refused:
        return HarnessResult(error("refusal"), str(refused))
    except GitError as failed:
        return HarnessResult(error("crash"), f"{failed}\n{failed.stderr}".strip())
    stamped = {**delivered.receipt, "completion": verdict.completion}
    if verdict.unproven:
        stamped["unproven"] = verdict.unproven
        request.log("output", f"UNPROVEN delivery (--allow-unproven): {verdict.unproven}")
    outcome = VerifierOutcome(
        status="verifier",
        output={"receipt": stamped},
        signals={SIGNAL: delivered.signal},
        diagnostic={"message": delivered.message},
    )
    request.log("output", f"delivery {delivered.signal}: {stamped}")
    return HarnessResult(outcome, delivered.message or None)


@dataclass(frozen=True)
class TrustVerdict:
    """What the last trust check let delivery do."""

    completion: str
    """The completion decision it saw."""
    unproven: str
    """Why the delivery is unproven (``""`` when it is proven)."""
    tree: str
    """The reviewed tree it verified the worktree against: what delivery commits."""


def _trust_verdict(events: list[Any]) -> TrustVerdict | None:
    """The last trust check's verdict when it let delivery go, else ``None``."""
    for event in reversed(events):
        if isinstance(event, NodeCompleted) and event.completion.reference.node == "trust_check":
            outcome = event.completion.outcome
            if not isinstance(outcome, VerifierOutcome):
                return None
            signal = outcome.signals.get("trust")
            if signal not in ("trusted", "unproven_allowed"):
                return None
            diagnostic = outcome.diagnostic if isinstance(outcome.diagnostic, dict) else {}
            completion = str(diagnostic.get("completion", ""))
            return TrustVerdict(
                completion,
                completion if signal == "unproven_allowed" else "",
                str(diagnostic.get("tree") or ""),
            )
    return None
