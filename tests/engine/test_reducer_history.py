"""Replay, resume and history consistency; ``check_outcome``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from reducer_sim import (
    RUN_ID,
    Sim,
    fails,
    fixture_ir,
    history_at,
    ok,
    script,
    verdict,
)

from zeroshot_kernel.contract.graph import StepNode, VerifierNode
from zeroshot_kernel.contract.outcome import VerifiedOutcome, VerifierOutcome, WorkerOutcome, error
from zeroshot_kernel.engine.decisions import Continue
from zeroshot_kernel.engine.history import Active, HistoryEntry, Settled, Voided
from zeroshot_kernel.engine.identity import execution_id
from zeroshot_kernel.engine.outcomes import check_outcome
from zeroshot_kernel.engine.reducer import reduce
from zeroshot_kernel.engine.reducer_errors import HistoryMismatch
from zeroshot_kernel.ledger.events import Occurrence

USUAL = {"value": 5, "items": [{"value": 1}]}
MALFORMED = error("malformed", "malformed_result")


def _promotion_run() -> Sim:
    """A par whose loser is voided after a retry, run to the end."""
    sim = Sim(fixture_ir("parallel-success-routed-promotion"), USUAL)
    sim.step()
    sim.settle("rightWriter", fails("crash"))
    sim.step()
    sim.settle("leftWriter", ok({"result": 7}))
    sim.step()
    sim.settle("rightWriter", ok({"result": 9}))
    sim.step()
    sim.settle("leftContinued", ok())
    sim.run(script({}, default=ok()))
    return sim


def _nested_run() -> Sim:
    sim = Sim(fixture_ir("nested-structural-folds"), {**USUAL, "items": [{"value": 1}] * 3})
    outcomes = {"verify[1]": [verdict("rejected"), fails("timeout")], "peer": [ok()]}
    sim.run(script(outcomes, default=verdict("accepted")))
    return sim


def _map_terminal_run() -> Sim:
    sim = Sim(fixture_ir("map-indexed-promotion"), {"items": [{"value": 1}, {"value": 2}]})
    sim.run(script({"mapWork[0]": [fails("crash")]}, default=ok({"result": 1})))
    return sim


def _loop_run() -> Sim:
    sim = Sim(fixture_ir("loop-and-group"), USUAL)
    sim.run(script({}, default=verdict("rejected")))
    return sim


RUNS: dict[str, Callable[[], Sim]] = {
    "par-promotion": _promotion_run,
    "nested-folds": _nested_run,
    "map": _map_terminal_run,
    "loop": _loop_run,
}


@pytest.mark.parametrize("make", RUNS.values(), ids=RUNS.keys())
def test_every_recorded_prefix_reduces_to_the_decisions_made_at_that_point(
    make: Callable[[], Sim],
) -> None:
    sim = make()
    final = sim.history
    for history, decisions in sim.reductions:
        position = max(
            [e.dispatch_position for e in history]
            + [e.state.position for e in history if isinstance(e.state, Settled | Voided)],
            default=0,
        )
        prefix = history_at(final, position)
        assert sorted(prefix, key=repr) == sorted(history, key=repr)
        again = reduce(sim.ir, sim.initial_input, prefix, run_id=RUN_ID)
        assert again == decisions
        shuffled = reduce(sim.ir, sim.initial_input, prefix[::-1], run_id=RUN_ID)
        assert shuffled == decisions


@pytest.mark.parametrize("make", RUNS.values(), ids=RUNS.keys())
def test_replaying_a_finished_run_dispatches_nothing(make: Callable[[], Sim]) -> None:
    sim = make()
    replay = reduce(sim.ir, sim.initial_input, sim.history, run_id=RUN_ID)
    assert replay.finished and replay.dispatches == () and replay.voids == ()
    assert replay.terminal == sim.reductions[-1][1].terminal


def test_execution_ids_are_unique_and_instances_stable_across_retries() -> None:
    sim = _nested_run()
    executions = [e.execution for e in sim.history]
    assert len(set(executions)) == len(executions)
    retried = [e for e in sim.history if e.node_instance == "verify[1]#2"]
    assert [e.attempt for e in retried] == [1]  # timeout with attempts=1 is not retried
    assert {e.node_instance for e in sim.history} == {
        "verify[0]#1",
        "verify[1]#1",
        "verify[1]#2",
        "verify[2]#1",
        "peer#1",
    }


def test_resume_closes_in_flight_work_as_crash_and_retries_it() -> None:
    sim = Sim(fixture_ir("success-routed-write"), USUAL)
    (dispatch,) = sim.step().dispatches
    # a new controller replays the history and closes what was in flight
    resumed = [dataclasses.replace(e, state=Settled(10, fails("crash"))) for e in sim.history]
    (retry,) = reduce(sim.ir, USUAL, resumed, run_id=RUN_ID).dispatches
    assert (retry.node_instance, retry.attempt) == (dispatch.node_instance, 2)


def test_a_different_run_id_does_not_match_the_recorded_executions() -> None:
    sim = Sim(fixture_ir("basic"), None)
    sim.step()
    with pytest.raises(HistoryMismatch, match="expected"):
        reduce(sim.ir, None, sim.history, run_id="another-run")


# --- history mismatches -----------------------------------------------------------------


def _entry(
    node: str,
    instance: str,
    attempt: int,
    state: Active | Settled | Voided,
    position: int = 1,
    input: object = None,
) -> HistoryEntry:
    return HistoryEntry(
        dispatch_position=position,
        node_instance=instance,
        execution=execution_id(RUN_ID, node, instance, attempt),
        occurrence=Occurrence(node=node),
        attempt=attempt,
        input=input,
        state=state,
    )


def test_a_recorded_input_that_differs_from_the_built_input_is_a_mismatch() -> None:
    sim = Sim(fixture_ir("success-routed-write"), USUAL)
    sim.step()
    with pytest.raises(HistoryMismatch, match="different input"):
        reduce(sim.ir, {**USUAL, "value": 6}, sim.history, run_id=RUN_ID)
    float_input = [dataclasses.replace(e, input={"value": 5.0}) for e in sim.history]
    with pytest.raises(HistoryMismatch, match="different input"):
        reduce(sim.ir, USUAL, float_input, run_id=RUN_ID)


@pytest.mark.parametrize(
    "history",
    [
        pytest.param([_entry("ghost", "ghost#1", 1, Active())], id="unknown-node"),
        pytest.param(
            [
                _entry("work", "work#1", 1, Settled(2, ok())),
                _entry("work", "work#1", 2, Active(), 3),
            ],
            id="retry-after-success",
        ),
        pytest.param(
            [_entry("work", "work#1", 1, Active()), _entry("work", "work#1", 2, Active(), 2)],
            id="retry-while-active",
        ),
        pytest.param(
            [
                _entry("work", "work#1", 1, Settled(2, fails("crash"))),
                _entry("work", "work#1", 2, Active(), 3),
            ],
            id="retry-beyond-attempts",
        ),
        pytest.param([_entry("work", "work#2", 1, Active())], id="skipped-visit"),
        pytest.param([_entry("work", "work#1", 2, Active())], id="attempt-gap"),
        pytest.param(
            [_entry("work", "work#1", 1, Voided(3, "parallel_join"))], id="void-without-join"
        ),
    ],
)
def test_history_the_graph_could_not_have_produced_is_a_mismatch(
    history: list[HistoryEntry],
) -> None:
    with pytest.raises(HistoryMismatch):
        reduce(fixture_ir("basic"), None, history, run_id=RUN_ID)


def test_a_duplicate_execution_is_a_mismatch() -> None:
    entry = _entry("work", "work#1", 1, Active())
    with pytest.raises(HistoryMismatch, match="twice"):
        reduce(
            fixture_ir("basic"), None, [entry, dataclasses.replace(entry, attempt=2)], run_id=RUN_ID
        )


def test_an_outcome_of_the_wrong_kind_is_a_mismatch() -> None:
    with pytest.raises(HistoryMismatch, match="verifier outcome"):
        reduce(
            fixture_ir("basic"),
            None,
            [_entry("work", "work#1", 1, Settled(2, verdict("x")))],
            run_id=RUN_ID,
        )


def _joined(loser_state: Voided) -> list[HistoryEntry]:
    """join-any: `right` completes at 4, `left` is then voided as the history says."""
    return [
        _entry("left", "left#1", 1, loser_state, position=1),
        _entry("right", "right#1", 1, Settled(4, ok()), position=2),
    ]


def test_a_void_must_come_after_the_join_and_carry_its_reason() -> None:
    ir = fixture_ir("join-any")
    accepted = reduce(ir, USUAL, _joined(Voided(5, "parallel_join")), run_id=RUN_ID)
    assert accepted.finished and accepted.voids == ()
    with pytest.raises(HistoryMismatch, match="voided"):
        reduce(ir, USUAL, _joined(Voided(3, "parallel_join")), run_id=RUN_ID)
    with pytest.raises(HistoryMismatch, match="voided"):
        reduce(ir, USUAL, _joined(Voided(5, "map_terminal")), run_id=RUN_ID)


def test_a_loser_that_settles_before_its_void_is_recorded_is_ignored() -> None:
    ir = fixture_ir("join-any")
    late = [
        _entry("left", "left#1", 1, Settled(5, ok()), position=1),
        _entry("right", "right#1", 1, Settled(4, ok()), position=2),
    ]
    decisions = reduce(ir, USUAL, late, run_id=RUN_ID)
    assert decisions.finished and decisions.voids == ()
    assert Continue("left") not in decisions.progress


# --- check_outcome ----------------------------------------------------------------------


def _step() -> StepNode:
    node = fixture_ir("success-routed-write").root.children[0]  # type: ignore[union-attr]
    assert isinstance(node, StepNode)
    return node


def _verifier() -> VerifierNode:
    node = fixture_ir("binding-channels").root.children[0]  # type: ignore[union-attr]
    assert isinstance(node, VerifierNode)
    return node


def _answer(**changes: object) -> WorkerOutcome:
    fields: dict[str, object] = {
        "status": "verifier",
        "output": {"result": 1},
        "signals": {"verdict": "accepted"},
        "diagnostic": {"code": 0},
    }
    return VerifierOutcome.model_validate({**fields, **changes})


def test_check_outcome_keeps_outcomes_that_fit() -> None:
    good_step = VerifiedOutcome(status="verified", output={"result": 2})
    assert check_outcome(_step(), good_step) is good_step
    assert check_outcome(_verifier(), _answer()) == _answer()
    refusal = error("refusal", "policy_denied")
    assert check_outcome(_step(), refusal) is refusal


@pytest.mark.parametrize(
    ("node", "outcome"),
    [
        pytest.param(
            _step, VerifiedOutcome(status="verified", output={"result": "x"}), id="step-output-type"
        ),
        pytest.param(
            _step,
            VerifiedOutcome(status="verified", output={"result": 1, "x": 1}),
            id="step-unknown-field",
        ),
        pytest.param(_step, _answer(), id="step-given-verifier-answer"),
        pytest.param(
            _verifier,
            VerifiedOutcome(status="verified", output={"result": 1}),
            id="verifier-given-step-output",
        ),
        pytest.param(_verifier, _answer(output={}), id="verifier-output-type"),
        pytest.param(_verifier, _answer(signals={}), id="missing-signal"),
        pytest.param(
            _verifier,
            _answer(signals={"verdict": "accepted", "mood": "ok"}),
            id="undeclared-signal",
        ),
        pytest.param(_verifier, _answer(signals={"verdict": "maybe"}), id="undeclared-label"),
        pytest.param(_verifier, _answer(diagnostic={"code": "x"}), id="diagnostic-type"),
    ],
)
def test_check_outcome_turns_misfits_into_malformed(
    node: Callable[[], StepNode | VerifierNode], outcome: WorkerOutcome
) -> None:
    assert check_outcome(node(), outcome) == MALFORMED
