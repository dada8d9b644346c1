"""The review discipline read from a run's ledger: lifecycle events and gate records.

Roles come from the graph's worker references (``builtin.agent.code-verifier@1`` is a
seam review wherever it sits and whatever its node is called), never from node names, and
the counters are derived by replaying the recorded history: renaming a node or restarting
the controller changes neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from zeroshot_kernel.contract.documents import node_documents
from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.harness.sessions import occurrence_key
from zeroshot_kernel.ledger.events import NodeCompleted, NodeStarted, RunEvent
from zeroshot_kernel.software_change.review.lifecycle import (
    Correction,
    Escalation,
    LifecycleEvent,
    LifecycleRefused,
    SeamLifecycle,
    StrategyRevision,
    Verdict,
    apply,
    start,
)

SEAM_REVIEWER = "builtin.agent.code-verifier@1"
INTEGRATION_REVIEWER = "builtin.agent.integration-verifier@1"
REPAIR_WORKER = "builtin.agent.review-repair@1"
OWNER_VERIFIER = "builtin.agent.acceptance-verifier@1"
GATE_WORKER = "zeroshot.review.gate@1"
SNAPSHOT_WORKER = "zeroshot.review.snapshot@1"
FINAL_GATE_WORKER = "zeroshot.review.final-gate@1"
VERDICTS = {
    "accepted": "approved",
    "rejected": "needs_correction",
    "load_bearing": "load_bearing_findings",
}


def workers(node: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(node name, worker reference) of every executable of a graph document."""
    for found in node_documents(node):
        if found["kind"] in ("step", "verifier"):
            yield found["name"], found["worker"]


@dataclass(frozen=True)
class Fact:
    """One settled execution with a role in the review discipline."""

    role: str
    node: str
    node_instance: str
    execution: str
    signals: dict[str, str]
    diagnostic: Any


def facts(graph: dict[str, Any], events: Iterable[RunEvent]) -> list[Fact]:
    roles = {name: ref for name, ref in workers(graph["root"])}
    started: dict[str, NodeStarted] = {}
    found: list[Fact] = []
    for event in events:
        if isinstance(event, NodeStarted):
            started[event.reference.execution] = event
        elif isinstance(event, NodeCompleted):
            reference = event.completion.reference
            outcome = event.completion.outcome
            role = roles.get(reference.node)
            if role is None:
                continue
            signals = outcome.signals if isinstance(outcome, VerifierOutcome) else {}
            diagnostic = outcome.diagnostic if isinstance(outcome, VerifierOutcome) else None
            found.append(
                Fact(
                    role,
                    reference.node,
                    reference.node_instance,
                    reference.execution,
                    dict(signals),
                    diagnostic,
                )
            )
    return found


def reviewer_session(fact: Fact) -> str:
    """The reviewer's session: its occurrence (the node instance without its visit), as
    the harness pools ``node_instance`` sessions across loop revisits."""
    return occurrence_key(fact.node_instance)


def gate_record(fact: Fact) -> dict[str, Any]:
    try:
        record: dict[str, Any] = json.loads((fact.diagnostic or {}).get("recordJson", "{}"))
    except ValueError:
        return {}
    return record


@dataclass
class Replay:
    lifecycle: SeamLifecycle
    gates: list[dict[str, Any]] = field(default_factory=list)
    refused: str = ""


def replay_run(
    graph: dict[str, Any],
    events: Iterable[RunEvent],
    seam: str,
    *,
    final_review: bool,
    current: dict[str, Any] | None = None,
) -> Replay:
    """The seam's lifecycle from the recorded executions. ``current`` is the record the
    running gate is about to write (its tree hash and focused proof), which a pending
    strategy revision is judged by."""
    life = start(seam, final_review=final_review)
    result = Replay(life)
    pending: str | None = None  # the last gate's route a repair answers
    restart_hash = ""
    records: list[dict[str, Any]] = []

    def step(event: LifecycleEvent) -> None:
        if result.refused:
            return
        try:
            result.lifecycle = apply(result.lifecycle, event)
        except LifecycleRefused as refused:
            result.refused = str(refused)

    held: list[LifecycleEvent] = []  # verdicts after a restart wait for its judgement

    for fact in facts(graph, events):
        if fact.role == GATE_WORKER:
            record = gate_record(fact)
            records.append(record)
            _revise(result, step, pending, restart_hash, record, seam)
            for event in held:
                step(event)
            held = []
            pending = fact.signals.get("lifecycle")
            if pending == "restart":
                restart_hash = str(record.get("treeHash", ""))
            elif pending != "correction":
                pending = None
        elif fact.role in (SEAM_REVIEWER, INTEGRATION_REVIEWER):
            label = VERDICTS.get(fact.signals.get("verdict", ""), "needs_correction")
            scope = "integration" if fact.role == INTEGRATION_REVIEWER else "seam"
            verdict = Verdict(
                seam=seam, reviewer=reviewer_session(fact), verdict=label, scope=scope
            )
            if pending == "revision":
                held.append(verdict)
            else:
                step(verdict)
        elif fact.role == REPAIR_WORKER:
            if (
                pending == "correction"
                or fact.node == "final_correction"
                or result.lifecycle.state == "FINAL_OWNER_CORRECTION_REQUIRED"
            ):
                step(Correction(seam=seam))
                pending = None
            elif pending == "restart":
                step(Escalation(seam=seam))
                pending = "revision"
    if current is not None:
        _revise(result, step, pending, restart_hash, current, seam)
    for event in held:
        step(event)
    result.gates = records
    return result


def _revise(
    result: Replay,
    step: Any,
    pending: str | None,
    restart_hash: str,
    record: dict[str, Any],
    seam: str,
) -> None:
    """After a strategy restart, the next gate's record judges the revision."""
    if pending != "revision" or result.lifecycle.state != "STRATEGY_ESCALATION_REQUIRES_OWNER":
        return
    new_hash = str(record.get("treeHash", ""))
    step(
        StrategyRevision(
            seam=seam,
            old_digest=result.lifecycle.digest,
            new_digest=new_hash or "unchanged",
            material_change=bool(new_hash) and new_hash != restart_hash,
            focused_proof="passed" if record.get("proof") == "passed" else "failed",
            reason=f"strategy restart after {result.lifecycle.reason or 'the breaker'}",
        )
    )


def latest_decision(graph: dict[str, Any], events: Iterable[RunEvent]) -> dict[str, Any] | None:
    """The completion decision the last review gate (or final gate) recorded, with its
    lifecycle and review tier (``tier``, also for gates recorded under its old name
    ``profile``)."""
    gates = [f for f in facts(graph, events) if f.role in (GATE_WORKER, FINAL_GATE_WORKER)]
    if not gates:
        return None
    record = gate_record(gates[-1])
    if "profile" in record and "tier" not in record:  # recorded before the rename
        record["tier"] = record.pop("profile")
    return record if "decision" in record else None


def review_lines(graph: dict[str, Any], events: Iterable[RunEvent]) -> list[str]:
    """What a run view shows of the review discipline: the recorded completion decision
    (first reason) and the seam's lifecycle; nothing for runs without a review gate."""
    record = latest_decision(graph, events)
    if record is None:
        return []
    decision = record["decision"]
    reasons = decision.get("reasons") or [""]
    lines = [f"completion: {decision['state']}" + (f" ({reasons[0]})" if reasons[0] else "")]
    life = record.get("lifecycle")
    if life:
        counters = life["counters"]
        lines.append(
            f"review:  seam {record.get('seam')} {life['state']}, cycle "
            f"{life['cycle']}, {counters['reviews']} review(s), "
            f"{counters['rechecks']} recheck(s), "
            f"{counters['strategy_restarts']} strategy restart(s)"
        )
    for receipt in record.get("receipts") or []:
        lines.append(
            f"check:   {receipt.get('command', '?')} -> exit {receipt.get('exit_code')}"
            f" (receipt {receipt.get('id', '?')})"
        )
    return lines
