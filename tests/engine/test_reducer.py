"""The reducer on sequential graphs: steps, verifiers, seq, choice, guards, terminals and
retries. Groups that run concurrently are in ``test_reducer_groups.py``; replay and history
consistency in ``test_reducer_history.py``."""

from __future__ import annotations

from typing import Any

import pytest
from reducer_sim import (
    ERRORS,
    INT,
    RUN_ID,
    Sim,
    bind,
    choice,
    compiled,
    control,
    fail,
    fails,
    fixture_ir,
    in_,
    ok,
    record,
    script,
    seq,
    state,
    step,
    succeed,
    verdict,
    verifier,
)

from zeroshot_kernel.contract.graph import CompiledGraphIr
from zeroshot_kernel.contract.outcome import WorkerOutcome
from zeroshot_kernel.engine.decisions import (
    Continue,
    Promote,
    PromotedValue,
    TerminalDecision,
)
from zeroshot_kernel.engine.identity import execution_id
from zeroshot_kernel.engine.reducer import reduce
from zeroshot_kernel.engine.reducer_errors import NoChoiceRoute, PayloadTypeError, ReducerError
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

USUAL = {"value": 5, "items": [{"value": 1}]}
"""An initial input for the fixtures' usual state."""

SUCCEEDED = SucceededResult(status="succeeded", output=None)
REJECTED = FailedResult(status="failed", reason="rejected")


def terminal_of(ir: CompiledGraphIr, initial: Any, *outcomes: WorkerOutcome) -> Any:
    """Run a graph to its end, settling its executions with ``outcomes`` in order."""
    queue = list(outcomes)
    decisions = Sim(ir, initial).run(lambda entry: queue.pop(0))
    assert decisions.terminal is not None
    return decisions.terminal.result


# --- step, seq, succeed -----------------------------------------------------------------


def test_a_step_is_dispatched_once_and_its_completion_reaches_the_terminal() -> None:
    sim = Sim(fixture_ir("basic"), None)
    first = sim.step()
    (dispatch,) = first.dispatches
    assert (dispatch.occurrence.node, dispatch.occurrence.map_indices) == ("work", [])
    assert (dispatch.node_instance, dispatch.attempt) == ("work#1", 1)
    assert dispatch.execution == execution_id(RUN_ID, "work", "work#1", 1)
    assert (dispatch.worker, dispatch.node_kind, dispatch.input) == (
        "fixture.worker@1",
        "step",
        None,
    )
    assert first.terminal is None and first.voids == ()

    waiting = sim.reduce()
    assert waiting.dispatches == () and waiting.waiting == (dispatch.execution,)
    assert not waiting.finished

    sim.settle("work", ok())
    final = sim.reduce()
    assert final.terminal == TerminalDecision(SUCCEEDED)
    assert final.finished and final.dispatches == ()
    assert final.progress == (Continue("work"),)


@pytest.mark.parametrize("code", ERRORS)
def test_an_error_no_guard_routes_simply_continues(code: str) -> None:
    assert terminal_of(fixture_ir("basic"), None, fails(code)) == SUCCEEDED  # type: ignore[arg-type]


def test_inputs_come_from_bindings_and_succeed_builds_its_output_from_bindings() -> None:
    sim = Sim(fixture_ir("success-routed-write"), USUAL)
    (dispatch,) = sim.step().dispatches
    assert dispatch.input == {"value": 5}
    sim.settle("produce", ok({"result": 2.5}))
    final = sim.reduce()
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"result": 2.5})
    )
    assert Promote("produce", (), (PromotedValue(("result",), 2.5),)) in final.progress


def test_a_verifier_sets_its_signals_then_writes_every_channel() -> None:
    sim = Sim(fixture_ir("binding-channels"), USUAL)
    (dispatch,) = sim.step().dispatches
    assert dispatch.node_kind == "verifier"
    sim.settle("verify", verdict("rejected", {"result": 0.5}, {"code": 7}))
    final = sim.reduce()
    assert final.terminal == TerminalDecision(SUCCEEDED)
    written = Promote(
        "verify",
        (),
        (
            PromotedValue(("result",), 0.5),
            PromotedValue(("verdict",), "rejected"),
            PromotedValue(("diagnostic",), 7),
        ),
    )
    assert written in final.progress


def test_fail_gives_a_failed_result_with_its_reason() -> None:
    ir = compiled(seq("root", step("work"), fail("stop", "gave_up")))
    sim = Sim(ir, {})
    assert sim.run(script({}, default=ok())).terminal == TerminalDecision(
        FailedResult(status="failed", reason="gave_up")
    )


# --- choice and guards ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (verdict("accepted"), SUCCEEDED),
        (verdict("rejected"), SUCCEEDED),
        *((fails(code), REJECTED) for code in ERRORS),  # type: ignore[arg-type]
    ],
)
def test_exhaustive_choice_routes_every_label_and_error(
    outcome: WorkerOutcome, expected: Any
) -> None:
    assert terminal_of(fixture_ir("exhaustive-terminal-choice"), USUAL, outcome) == expected


SELECTED = SUCCEEDED
OTHERWISE = FailedResult(status="failed", reason="rejected")


@pytest.mark.parametrize(
    ("fixture", "outcome", "expected"),
    [
        ("guard-in", verdict("accepted"), SELECTED),
        ("guard-in", verdict("rejected"), OTHERWISE),
        ("guard-in", fails("crash"), OTHERWISE),
        ("guard-all", verdict("accepted"), SELECTED),
        ("guard-all", verdict("rejected"), OTHERWISE),
        ("guard-any", verdict("accepted"), SELECTED),
        ("guard-any", fails("timeout"), SELECTED),
        ("guard-any", verdict("rejected"), OTHERWISE),
        ("guard-any", fails("refusal"), OTHERWISE),
        ("guard-not", verdict("accepted"), OTHERWISE),
        ("guard-not", verdict("rejected"), SELECTED),
        ("guard-not", fails("crash"), SELECTED),
        ("guard-k-of-n", verdict("accepted"), SELECTED),
        ("guard-k-of-n", fails("timeout"), SELECTED),
        ("guard-k-of-n", verdict("rejected"), OTHERWISE),
        ("guard-k-of-n", fails("malformed"), OTHERWISE),
    ],
)
def test_each_guard_kind_selects_the_first_true_branch_else_otherwise(
    fixture: str, outcome: WorkerOutcome, expected: Any
) -> None:
    assert terminal_of(fixture_ir(fixture), USUAL, outcome) == expected


def _two_verdicts(count: int) -> CompiledGraphIr:
    """k_of_n over two verifiers' signals, needing ``count`` accepted."""
    guard = {
        "kind": "k_of_n",
        "count": count,
        "values": [control("a", "signal", "verdict"), control("b", "signal", "verdict")],
        "labels": ["accepted"],
    }
    return compiled(
        seq(
            "root",
            verifier("a"),
            verifier("b"),
            choice("gate", (guard, succeed()), otherwise=fail("short", "too_few")),
        )
    )


@pytest.mark.parametrize(
    ("count", "labels", "succeeds"),
    [
        (2, ("accepted", "accepted"), True),
        (2, ("accepted", "rejected"), False),
        (1, ("rejected", "accepted"), True),
        (1, ("rejected", "rejected"), False),
    ],
)
def test_k_of_n_counts_the_selectors_that_carry_a_listed_label(
    count: int, labels: tuple[str, str], succeeds: bool
) -> None:
    worker = script({"a": [verdict(labels[0])], "b": [verdict(labels[1])]})
    result = Sim(_two_verdicts(count), {}).run(worker).terminal
    assert result is not None and (result.result.status == "succeeded") is succeeds


def test_a_choice_with_no_applicable_branch_and_no_otherwise_is_an_error() -> None:
    ir = compiled(
        seq(
            "root",
            verifier("check"),
            choice("gate", (in_(control("check", "signal", "verdict"), "accepted"), succeed())),
        )
    )
    sim = Sim(ir, {})
    sim.step()
    sim.settle("check", verdict("rejected"))
    with pytest.raises(NoChoiceRoute, match="gate"):
        sim.reduce()


def test_a_choice_branch_that_falls_through_continues_the_sequence() -> None:
    ir = compiled(
        seq(
            "root",
            verifier("check"),
            choice(
                "gate",
                (in_(control("check", "signal", "verdict"), "rejected"), step("fix")),
                otherwise=step("polish"),
            ),
            succeed(),
        )
    )
    sim = Sim(ir, {})
    final = sim.run(script({"check": [verdict("rejected")]}, default=ok()))
    assert final.terminal == TerminalDecision(SUCCEEDED)
    assert [e.occurrence.node for e in sim.history] == ["check", "fix"]
    assert Continue("gate") in final.progress


# --- attempts ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["crash", "timeout"])
def test_a_transient_error_is_retried_as_the_next_attempt_of_the_same_instance(
    code: str,
) -> None:
    sim = Sim(fixture_ir("success-routed-write"), USUAL)
    (first,) = sim.step().dispatches
    sim.settle("produce", fails(code))  # type: ignore[arg-type]
    (second,) = sim.step().dispatches
    assert (second.node_instance, second.attempt) == (first.node_instance, 2)
    assert second.execution != first.execution
    assert second.execution == execution_id(RUN_ID, "produce", "produce#1", 2)
    assert second.input == first.input == {"value": 5}
    sim.settle("produce", ok({"result": 1}))
    assert sim.reduce().terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"result": 1})
    )


def test_when_attempts_are_spent_the_last_error_routes_through_the_guards() -> None:
    sim = Sim(fixture_ir("success-routed-write"), USUAL)
    final = sim.run(script({"produce": [fails("crash"), fails("timeout")]}))
    assert final.terminal == TerminalDecision(REJECTED)
    assert [e.attempt for e in sim.dispatched("produce")] == [1, 2]


@pytest.mark.parametrize("code", ["refusal", "malformed"])
def test_refusal_and_malformed_are_never_retried(code: str) -> None:
    sim = Sim(fixture_ir("success-routed-write"), USUAL)
    final = sim.run(script({"produce": [fails(code)]}))  # type: ignore[arg-type]
    assert final.terminal == TerminalDecision(REJECTED)
    assert [e.attempt for e in sim.dispatched("produce")] == [1]


def test_an_error_after_a_retry_is_routed_by_its_own_code() -> None:
    retried = compiled(
        seq(
            "root",
            verifier("v", attempts=3),
            choice(
                "route",
                (in_(control("v", "error"), "timeout"), succeed()),
                otherwise=fail("other", "not_timeout"),
            ),
        )
    )
    sim = Sim(retried, {})
    final = sim.run(script({"v": [fails("crash"), fails("crash"), fails("timeout")]}))
    assert final.terminal == TerminalDecision(SUCCEEDED)
    sim = Sim(retried, {})
    final = sim.run(script({"v": [fails("timeout"), fails("refusal")]}))
    assert final.terminal == TerminalDecision(FailedResult(status="failed", reason="not_timeout"))


# --- what the reducer refuses -----------------------------------------------------------


def test_an_initial_input_that_does_not_fit_is_rejected_clearly() -> None:
    with pytest.raises(PayloadTypeError, match="initial input"):
        reduce(fixture_ir("success-routed-write"), {"value": "five"}, [], run_id=RUN_ID)


def test_a_built_input_that_does_not_fit_the_declared_input_is_rejected_clearly() -> None:
    loose = compiled(
        seq(
            "root",
            step("typed", input=record(n=INT), inputs=[bind("n", state("n"))]),
            succeed(),
        ),
        initial_input=record(n={"kind": "string"}),
    )
    with pytest.raises(PayloadTypeError, match="input of typed"):
        reduce(loose, {"n": "not a number"}, [], run_id=RUN_ID)


def test_only_full_profile_graphs_execute() -> None:
    document = fixture_ir("basic").to_wire()
    single = CompiledGraphIr.from_wire(
        {
            **document,
            "profile": "openengine.graph.single-worker/v1",
            "root": {**document["root"]["children"][0]},
        }
    )
    with pytest.raises(ReducerError, match="full/v1"):
        reduce(single, None, [], run_id=RUN_ID)


def test_a_graph_that_falls_through_is_an_error() -> None:
    with pytest.raises(ReducerError, match="fell through"):
        Sim(compiled(seq("root", step("work"))), {}).run(script({}, default=ok()))
