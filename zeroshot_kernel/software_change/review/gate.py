"""``zeroshot.review.gate@1``: the trusted gate after each review pass of software-change.

A python-harness verifier (no agent): it reads the run's ledger, takes the worktree's
snapshot (the change as a git tree, :mod:`~zeroshot_kernel.software_change.snapshot`), runs
the declared checks in a box on exactly that tree (:mod:`.checks`: their receipts are the
evidence), replays the seam's review lifecycle and answers ``lifecycle`` = ``approved``
(deliver), ``correction`` (the owner fixes the findings, the same reviewer rechecks once),
``restart`` (the one strategy restart) or ``blocked``. Its diagnostic records the
lifecycle, the receipts, the completion decision and the snapshot tree they hold for
(``recordJson``), so every view reads them from the ledger, and the trust check and
delivery bind to that tree.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.software_change.review.briefs import base_revision, declared_checks
from zeroshot_kernel.software_change.review.checks import run_check
from zeroshot_kernel.software_change.review.completion import (
    CheckoutIntegrity,
    CompletionDecision,
    CompletionFacts,
    MicroEligibility,
    Requirement,
    Review,
    decide,
)
from zeroshot_kernel.software_change.review.ledger import (
    INTEGRATION_REVIEWER,
    OWNER_VERIFIER,
    SEAM_REVIEWER,
    SNAPSHOT_WORKER,
    Fact,
    facts,
    replay_run,
)
from zeroshot_kernel.software_change.review.lifecycle import SeamLifecycle
from zeroshot_kernel.software_change.review.receipts import (
    Current,
    EvidenceReceipt,
    Fingerprint,
    current,
    fingerprint,
    staleness,
)
from zeroshot_kernel.software_change.review.tiers import Tier, review_tier
from zeroshot_kernel.software_change.secrets import refusal
from zeroshot_kernel.software_change.snapshot import Snapshot, take
from zeroshot_kernel.workers import Verdict, WorkerContext

LEDGER_ENV = "ZEROSHOT_LEDGER"


def admitted_input(context: WorkerContext) -> Any:
    """The run's admitted input (the ledger's record, never the worktree's files)."""
    from zeroshot_kernel.client import Client

    client = Client(os.environ.get(LEDGER_ENV), workspace=str(context.workspace))
    try:
        return client.admitted(context.run_id).get("initialInput")
    finally:
        client.close()


def snapshot_now(context: WorkerContext, run_input: Any) -> Snapshot:
    """The worktree's snapshot against the base the run recorded at preparation."""
    return take(context.workspace.resolve(), base_revision(run_input) or "HEAD")


def run_events(context: WorkerContext) -> tuple[dict[str, Any], list[Any]]:
    """The run's admitted graph and its recorded events (for trusted python nodes)."""
    from zeroshot_kernel.client import Client  # the ledger's imports only when called

    client = Client(os.environ.get(LEDGER_ENV), workspace=str(context.workspace))
    try:
        graph: dict[str, Any] = client.admitted(context.run_id)["graph"]
        events = [event for _, event in client.run(context.run_id).events()]
    finally:
        client.close()
    return graph, events


def _latest(found: list[Fact], role: str) -> Fact | None:
    matching = [f for f in found if f.role == role]
    return matching[-1] if matching else None


def review_gate(value: dict[str, Any], context: WorkerContext) -> Verdict:
    review = value["review"]
    tier, seam = review_tier(review), review["seam"]
    graph, events = run_events(context)
    found = facts(graph, events)
    passes = sum(f.role == "zeroshot.review.gate@1" for f in found) + 1
    evidence = _evidence(review, found, context)
    receipts, now, owner_ok = evidence.receipts, evidence.now, evidence.owner_ok
    record: dict[str, Any] = {
        "pass": passes,
        "treeHash": now.fingerprint.working_tree_hash,
        "proof": "passed" if owner_ok else "failed",
    }
    life: SeamLifecycle | None = None
    message = ""
    if tier == "micro":
        signal = "approved" if owner_ok else "correction"
    else:
        replayed = replay_run(graph, events, seam, final_review=tier == "high-risk", current=record)
        life = replayed.lifecycle
        signal, message = _route(life, owner_ok, replayed.refused)
    if evidence.refused:
        signal, message = "blocked", evidence.refused
    if signal == "correction" and not message:
        failed = [r.command for r in receipts if r.exit_code != 0]
        message = "owner verification: " + (
            "; ".join(f"`{c}` failed" for c in failed)
            or "the acceptance review rejected the change"
        )
    decision = decide(
        _facts(
            tier,
            now,
            receipts,
            life,
            found,
            owner_ok,
            review["checks"],
            review.get("classification"),
        )
    )
    record |= {"signal": signal, **_recorded(review, life, evidence, decision)}
    context.log(f"review gate: {signal}; completion {decision.state}")
    return Verdict(
        signals={"lifecycle": signal},
        diagnostic={"message": message, "recordJson": json.dumps(record)},
    )


def final_gate(value: dict[str, Any], context: WorkerContext) -> Verdict:
    """``zeroshot.review.final-gate@1``: after a high-risk change's accepted final
    integration review, the checks run once more on the final tree (their receipts are the
    obligations record) and the completion decision is recorded against that review."""
    review = value["review"]
    graph, events = run_events(context)
    found = facts(graph, events)
    evidence = _evidence(review, found, context)
    receipts, now, owner_ok = evidence.receipts, evidence.now, evidence.owner_ok
    life = replay_run(graph, events, review["seam"], final_review=True).lifecycle
    decision = decide(
        _facts(
            review_tier(review),
            now,
            receipts,
            life,
            found,
            owner_ok,
            review["checks"],
            review.get("classification"),
            reviewer=INTEGRATION_REVIEWER,
        )
    )
    record = _recorded(review, life, evidence, decision)
    context.log(f"final gate: completion {decision.state}")
    return Verdict(
        signals={"decision": "recorded"},
        diagnostic={"message": evidence.refused, "recordJson": json.dumps(record)},
    )


@dataclass(frozen=True)
class Evidence:
    receipts: list[EvidenceReceipt]
    now: Current
    owner_ok: bool
    """The owner verified the change: its acceptance verifier accepted, every check passed."""
    tree: str
    """The snapshot tree the checks ran on."""
    refused: str = ""
    """Why no check ran (secret-looking files in the change)."""


def _checks(
    commands: list[str], snap: Snapshot, context: WorkerContext, prefix: str, *, claims: bool
) -> list[EvidenceReceipt]:
    """The declared checks, each run in a box on the snapshot's tree."""
    return [
        run_check(
            shlex.split(command),
            context.workspace.resolve(),
            tree=snap.tree,
            containment=context.containment,
            receipt_id=f"{context.execution}:{prefix}-{n:03d}",
            requirement_ids=[f"CHK-{n:03d}"] if claims else [],
            establishes=[f"passes: {command}"] if claims else [],
        )
        for n, command in enumerate(commands, 1)
    ]


def _evidence(review: dict[str, Any], found: list[Fact], context: WorkerContext) -> Evidence:
    """The declared checks run now on the worktree's snapshot (none when it holds a
    secret), the checkout now, and whether the owner verified the change."""
    snap = snapshot_now(context, admitted_input(context))
    refused = refusal(snap.touched.secrets) if snap.touched.secrets else ""
    receipts = [] if refused else _checks(review["checks"], snap, context, "CHK", claims=True)
    owner = _latest(found, OWNER_VERIFIER)
    owner_ok = (
        not refused
        and owner is not None
        and owner.signals.get("verdict") == "accepted"
        and all(r.exit_code == 0 for r in receipts)
    )
    now = current(context.workspace.resolve(), snapshot_tree=snap.tree)
    return Evidence(receipts, now, owner_ok, snap.tree, refused)


def _recorded(
    review: dict[str, Any],
    life: SeamLifecycle | None,
    evidence: Evidence,
    decision: CompletionDecision,
) -> dict[str, Any]:
    return {
        "seam": review["seam"],
        "tier": review_tier(review),
        "lifecycle": None
        if life is None
        else {
            "state": life.state,
            "cycle": life.cycle,
            "reason": life.reason,
            "counters": life.counters.model_dump(),
        },
        "receipts": [r.model_dump(mode="json") for r in evidence.receipts],
        "decision": decision.model_dump(mode="json"),
        "snapshotTree": evidence.tree,
    }


def review_snapshot(value: None, context: WorkerContext) -> Verdict:
    """``zeroshot.review.snapshot@1``: just before the reviewers start (trusted code), the
    worktree's snapshot: a change holding a secret-looking file is refused here
    (``checkout`` = ``secret``), before any check prints it or any brief quotes it; else
    the declared checks run on its tree, so every reviewer's brief carries receipts for it
    (the gate runs them again after the reviews: its receipts are the evidence); then the
    worktree's fingerprint, so the gate can tell whether the reviewers' checkout stayed as
    it was."""
    run_input = admitted_input(context)
    snap = snapshot_now(context, run_input)
    found = fingerprint(context.workspace)
    recorded = {
        "gitCommit": found.git_commit,
        "gitTree": found.git_tree,
        "workingTreeHash": found.working_tree_hash,
        "dirtyTreeFingerprint": found.dirty_tree_fingerprint,
        "snapshotTree": snap.tree,
    }
    if snap.touched.secrets:
        message = refusal(snap.touched.secrets)
        context.log(f"review snapshot: {message}")
        return Verdict(
            signals={"checkout": "secret"},
            diagnostic={**recorded, "message": message, "recordJson": json.dumps({"receipts": []})},
        )
    receipts = _checks(declared_checks(run_input), snap, context, "PRE", claims=False)
    return Verdict(
        signals={"checkout": "recorded"},
        diagnostic={
            **recorded,
            "message": "",
            "recordJson": json.dumps({"receipts": [r.model_dump(mode="json") for r in receipts]}),
        },
    )


def checkout_integrity(
    snapshot: Fact | None, now: Fingerprint, tree: str = ""
) -> CheckoutIntegrity:
    """Unchanged when the tree the reviewers started on (recorded by the snapshot before
    them: its fingerprints and, when both sides have one, its snapshot tree) is the tree
    now; unverified without a snapshot."""
    if snapshot is None or not isinstance(snapshot.diagnostic, dict):
        return "REVIEW_CHECKOUT_UNVERIFIED"
    before = snapshot.diagnostic
    same = (
        before["gitCommit"],
        before["gitTree"],
        before["workingTreeHash"],
        before["dirtyTreeFingerprint"],
    ) == (now.git_commit, now.git_tree, now.working_tree_hash, now.dirty_tree_fingerprint)
    recorded = before.get("snapshotTree")
    if recorded and tree and recorded != tree:
        same = False
    return "REVIEW_CHECKOUT_UNCHANGED" if same else "REVIEW_CHECKOUT_CHANGED"


def _route(life: SeamLifecycle, owner_ok: bool, refused: str) -> tuple[str, str]:
    if refused:
        return "blocked", f"review lifecycle refused an event: {refused}"
    state = life.state
    if state == "BLOCKED":
        return "blocked", f"review blocked: {life.reason}"
    if state in ("CIRCUIT_BREAKER", "STRATEGY_ESCALATION_REQUIRES_OWNER"):
        if life.counters.strategy_restarts >= life.limits.strategy_restarts_per_seam:
            return "blocked", "review blocked: the one strategy restart is spent"
        return "restart", (
            "circuit breaker after the recheck "
            f"({life.reason}): restart with one materially new strategy"
        )
    if state == "OWNER_CORRECTION_REQUIRED":
        return (
            "correction",
            "fix every Critical and Important finding in one wave; the same reviewer rechecks once",
        )
    if state in ("REVIEW_LIFECYCLE_COMPLETE", "FINAL_INTEGRATION_REVIEW_REQUIRED"):
        return ("approved", "") if owner_ok else ("correction", "")
    return "correction", f"review lifecycle: {state}"


def _facts(
    tier: Tier,
    now: Current,
    receipts: list[EvidenceReceipt],
    life: SeamLifecycle | None,
    found: list[Fact],
    owner_ok: bool,
    checks: list[str],
    classification: dict[str, Any] | None,
    *,
    reviewer: str = SEAM_REVIEWER,
) -> CompletionFacts:
    stale = {r.id: why for r in receipts if (why := staleness(r, now)) is not None}
    rows = [
        Requirement(
            id=f"CHK-{n:03d}",
            authoritative_text=command,
            status="verified" if receipts[n - 1].exit_code == 0 else "unverified",
            evidence_refs=[receipts[n - 1].id],
            intended_acceptance_claims=[f"passes: {command}"],
        )
        for n, command in enumerate(checks, 1)
    ]
    code = _latest(found, reviewer)
    review = None
    if code is not None:
        head = now.fingerprint.git_commit
        review = Review(
            review_id=code.execution,
            reviewer_step_id=code.execution,
            verdict={"accepted": "approved", "load_bearing": "load_bearing_findings"}.get(
                code.signals.get("verdict", ""), "needs_correction"
            ),
            head=head,
            base="",
            scope="integration" if reviewer == INTEGRATION_REVIEWER else "seam",
            checkout=checkout_integrity(
                _latest(found, SNAPSHOT_WORKER), now.fingerprint, now.snapshot_tree
            ),
            engine_authenticated=True,
        )
    micro = None
    if tier == "micro" and classification is not None:
        # The eligibility record: the engine-run classifier's ratings, bound to this head.
        micro = MicroEligibility(
            head=now.fingerprint.git_commit,
            tree=now.fingerprint.git_tree,
            ratings=classification["ratings"],
            coherent_slice=classification["coherentSlice"],
            public_contract=classification["publicContract"],
            hard_triggers=classification["hardTriggers"],
            proof_refs=[r.id for r in receipts if r.exit_code == 0],
        )
    return CompletionFacts(
        tier=tier,
        micro=micro,
        candidate_head=now.fingerprint.git_commit,
        candidate_tree=now.fingerprint.git_tree,
        owner_verified=owner_ok,
        requirements=rows,
        receipts=receipts,
        stale=stale,
        review_available=tier != "micro",
        lifecycle_state=life.state if life else "INITIAL_REVIEW_REQUIRED",
        review=review,
        # High risk: the obligations are the declared checks, each passing on this tree.
        obligations_satisfied=bool(receipts)
        and not stale
        and all(r.exit_code == 0 for r in receipts)
        if reviewer == INTEGRATION_REVIEWER
        else None,
    )
