"""The review lifecycle as a state machine: every legal path (explored exhaustively over
the event alphabet), no path to a third cycle, the same-reviewer recheck rule, the one
strategy restart, the two final integration reviews, and counters that survive node
renames and controller restarts when replayed from a real run's ledger."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from software_change_support import repository, script, start_change

from zeroshot_kernel.ledger.events import (
    ControllerAttached,
    FailedResult,
    NodeCompleted,
    NodeStarted,
)
from zeroshot_kernel.software_change.review.ledger import replay_run
from zeroshot_kernel.software_change.review.lifecycle import (
    Correction,
    Escalation,
    LifecycleEvent,
    LifecycleRefused,
    SeamLifecycle,
    StrategyRevision,
    Verdict,
    apply,
    replay,
    start,
)

S = "main"


def verdict(label: str, reviewer: str = "r1", scope: str = "seam") -> Verdict:
    return Verdict(seam=S, reviewer=reviewer, verdict=label, scope=scope)


def revision(old: str = "", new: str = "d2", **changes: Any) -> StrategyRevision:
    fields: dict[str, Any] = {
        "seam": S,
        "old_digest": old,
        "new_digest": new,
        "material_change": True,
        "focused_proof": "passed",
        "reason": "new approach",
        **changes,
    }
    return StrategyRevision(**fields)


ALPHABET: list[LifecycleEvent] = [
    verdict("approved"),
    verdict("needs_correction"),
    verdict("load_bearing_findings"),
    verdict("approved", "r2"),
    verdict("needs_correction", "r2"),
    verdict("approved", scope="integration"),
    verdict("needs_correction", scope="integration"),
    Correction(seam=S),
    Escalation(seam=S),
    revision(),
]


def explore(final_review: bool) -> dict[str, SeamLifecycle]:
    """Every lifecycle reachable by legal events (absorbed ones excluded), by state key."""
    first = start(S, final_review=final_review)
    frontier, seen = [first], {}
    while frontier:
        life = frontier.pop()
        key = json.dumps(life.model_dump(exclude={"history"}), sort_keys=True)
        if key in seen:
            continue
        seen[key] = life
        if life.state in ("BLOCKED", "REVIEW_LIFECYCLE_COMPLETE"):
            continue
        for event in ALPHABET:
            with contextlib.suppress(LifecycleRefused):
                frontier.append(apply(life, event))
    return seen


@pytest.mark.parametrize("final_review", [False, True])
def test_every_legal_path_stays_within_two_cycles(final_review: bool) -> None:
    reached = explore(final_review)
    states = {life.state for life in reached.values()}
    expected = {
        "INITIAL_REVIEW_REQUIRED",
        "OWNER_CORRECTION_REQUIRED",
        "CORRECTION_RECHECK_REQUIRED",
        "CIRCUIT_BREAKER",
        "STRATEGY_ESCALATION_REQUIRES_OWNER",
        "NEW_STRATEGY_REVIEW_REQUIRED",
        "REVIEW_LIFECYCLE_COMPLETE",
        "BLOCKED",
    }
    if final_review:
        expected |= {"FINAL_INTEGRATION_REVIEW_REQUIRED", "FINAL_OWNER_CORRECTION_REQUIRED"}
    assert states == expected
    for life in reached.values():
        assert life.cycle <= 2  # no path to a third cycle
        assert life.counters.strategy_restarts <= 1
        assert life.counters.rechecks <= 2
        assert life.counters.final_reviews <= 2


def test_the_standard_paths() -> None:
    assert replay([verdict("approved")])[S].state == "REVIEW_LIFECYCLE_COMPLETE"
    fixed = replay([verdict("needs_correction"), Correction(seam=S), verdict("approved")])[S]
    assert fixed.state == "REVIEW_LIFECYCLE_COMPLETE"
    assert (fixed.counters.reviews, fixed.counters.rechecks) == (1, 1)
    breaker = replay(
        [verdict("needs_correction"), Correction(seam=S), verdict("load_bearing_findings")]
    )[S]
    assert (breaker.state, breaker.reason) == (
        "CIRCUIT_BREAKER",
        "load_bearing_findings_after_recheck",
    )
    cycle2: list[LifecycleEvent] = [
        verdict("needs_correction"),
        Correction(seam=S),
        verdict("needs_correction"),
        Escalation(seam=S),
        revision(),
        verdict("needs_correction", "r2"),
        Correction(seam=S),
    ]
    life = replay(cycle2)[S]
    assert (life.state, life.cycle, life.reviewer) == ("CORRECTION_RECHECK_REQUIRED", 2, "r2")
    blocked = apply(life, verdict("needs_correction", "r2"))
    assert (blocked.state, blocked.reason) == ("BLOCKED", "second_cycle_failed")
    assert apply(blocked, verdict("approved", "r2")).state == "BLOCKED"  # absorbing


def test_the_recheck_belongs_to_the_same_reviewer() -> None:
    life = replay([verdict("needs_correction", "r1"), Correction(seam=S)])[S]
    with pytest.raises(LifecycleRefused, match="belongs to reviewer r1"):
        apply(life, verdict("approved", "r2"))


def test_a_second_correction_wave_trips_the_breaker() -> None:
    life = replay([verdict("needs_correction"), Correction(seam=S), Correction(seam=S)])[S]
    assert (life.state, life.reason) == ("CIRCUIT_BREAKER", "second_correction_wave")


@pytest.mark.parametrize(
    "bad, problem",
    [
        (revision(new=""), "same digest"),
        (revision(material_change=False), "no material change"),
        (revision(focused_proof="failed"), "focused proof failed"),
        (revision(reason=" "), "no reason"),
        (revision(old="other"), "old digest"),
    ],
)
def test_a_strategy_revision_needs_a_material_proven_change(
    bad: StrategyRevision, problem: str
) -> None:
    life = replay(
        [
            verdict("needs_correction"),
            Correction(seam=S),
            verdict("needs_correction"),
            Escalation(seam=S),
        ]
    )[S]
    with pytest.raises(LifecycleRefused, match=problem):
        apply(life, bad)


def test_breaker_states_accept_only_escalation_or_revision() -> None:
    life = replay([verdict("needs_correction"), Correction(seam=S), verdict("needs_correction")])[S]
    for event in (verdict("approved"), Correction(seam=S)):
        with pytest.raises(LifecycleRefused):
            apply(life, event)


def test_final_integration_reviews_are_two_at_most() -> None:
    events: list[LifecycleEvent] = [
        verdict("approved"),
        verdict("needs_correction", scope="integration"),
        Correction(seam=S),
        verdict("needs_correction", scope="integration"),
    ]
    life = replay(events, final_review=True)[S]
    assert (life.state, life.reason) == (
        "STRATEGY_ESCALATION_REQUIRES_OWNER",
        "final_integration_review_failed",
    )
    assert apply(life, revision()).state == "BLOCKED"  # no restart possible
    ok = replay([*events[:3], verdict("approved", scope="integration")], final_review=True)[S]
    assert ok.state == "REVIEW_LIFECYCLE_COMPLETE"


def test_renaming_the_seam_label_of_events_cannot_reset_a_seam() -> None:
    """Counters are per seam id; a lifecycle refuses events of another seam."""
    life = replay([verdict("needs_correction")])[S]
    with pytest.raises(LifecycleRefused, match="seam"):
        apply(life, Verdict(seam="renamed", reviewer="r1", verdict="approved"))


# --- from a real run's ledger ------------------------------------------------------------


def _rename(document: Any, names: dict[str, str]) -> Any:
    if isinstance(document, dict):
        return {
            k: (
                names.get(v, v)
                if k in ("name", "node") and isinstance(v, str)
                else _rename(v, names)
            )
            for k, v in document.items()
        }
    if isinstance(document, list):
        return [_rename(v, names) for v in document]
    return document


@pytest.mark.slow  # explores the lifecycle exhaustively
def test_a_second_failed_cycle_blocks_the_run_and_replays_the_same_after_renames(
    tmp_path: Path,
) -> None:
    repo, _ = repository(tmp_path)
    script(repo, {"code": ["rejected"] * 6})
    change = start_change(repo, delivery="none")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "blocked"
    assert change.signals("review_gate", "lifecycle") == [
        "correction",
        "restart",
        "correction",
        "blocked",
    ]
    assert len(change.completions("code")) == 4  # two cycles of review + recheck, no third

    graph = change.client.ledger.admitted(change.run.id)["graph"]
    events = [event for _, event in change.run.events()]
    original = replay_run(graph, events, "main", final_review=False).lifecycle
    assert (original.state, original.cycle) == ("BLOCKED", 2)
    assert original.counters.strategy_restarts == 1

    names = {"code": "seam_reviewer", "review_repair": "fixer", "review_gate": "gate2"}
    renamed_graph = _rename(graph, names)
    renamed: list[Any] = []
    for event in events:
        if isinstance(event, NodeStarted | NodeCompleted):
            event = type(event).model_validate(_rename(event.model_dump(mode="json"), names))
        renamed.append(event)
        if isinstance(event, NodeCompleted):  # a controller restart after every completion
            renamed.append(ControllerAttached(controller="resumed", resumed=True))
    again = replay_run(renamed_graph, renamed, "main", final_review=False).lifecycle
    assert again.counters == original.counters and again.state == original.state
