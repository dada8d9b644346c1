"""The reducer on groups that run work concurrently or repeatedly: par joins, loops, maps."""

from __future__ import annotations

from typing import Any

import pytest
from reducer_sim import (
    INT,
    Sim,
    array,
    bind,
    choice,
    compiled,
    control,
    fail,
    fails,
    fixture_ir,
    in_,
    item,
    loop,
    map_,
    ok,
    optional,
    par,
    record,
    script,
    seq,
    state,
    step,
    succeed,
    verdict,
    verifier,
    write,
)

from zeroshot_kernel.contract.graph import CompiledGraphIr
from zeroshot_kernel.engine.decisions import (
    Continue,
    Promote,
    PromotedValue,
    TerminalDecision,
    VoidLoser,
)
from zeroshot_kernel.engine.history import HistoryEntry
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

USUAL = {"value": 5, "items": [{"value": 1}]}
SUCCEEDED = SucceededResult(status="succeeded", output=None)


def failed(reason: str) -> TerminalDecision:
    return TerminalDecision(FailedResult(status="failed", reason=reason))


def nodes(entries: list[HistoryEntry]) -> list[str]:
    return [entry.node_instance for entry in entries]


# --- par ---------------------------------------------------------------------------------


def test_join_all_runs_every_branch_concurrently_and_waits_for_all() -> None:
    sim = Sim(fixture_ir("join-all"), USUAL)
    first = sim.step()
    assert [d.node_instance for d in first.dispatches] == ["left#1", "right#1"]
    sim.settle("right", ok())
    halfway = sim.step()
    assert halfway.terminal is None and halfway.voids == () and len(halfway.waiting) == 1
    sim.settle("left", fails("crash"))  # an error still falls through its branch
    final = sim.reduce()
    assert final.terminal == TerminalDecision(SUCCEEDED) and final.finished
    assert Continue("parallel") in final.progress


@pytest.mark.parametrize("fixture", ["join-any", "join-quorum"])
def test_join_any_and_quorum_one_void_the_active_losers(fixture: str) -> None:
    sim = Sim(fixture_ir(fixture), USUAL)
    sim.step()
    (left,) = sim.active("left")
    sim.settle("right", ok())
    joined = sim.step()
    assert joined.voids == (VoidLoser(left.execution, "parallel_join"),)
    assert joined.terminal == TerminalDecision(SUCCEEDED)
    assert joined.waiting == () and not joined.finished
    final = sim.reduce()
    assert final.finished and final.voids == () and final.dispatches == ()
    assert Continue("right") in final.progress and Continue("left") not in final.progress


def test_join_first_counts_only_completions_where_when_holds() -> None:
    sim = Sim(fixture_ir("join-first"), USUAL)
    sim.step()
    sim.settle("right", ok())  # completes first, but `when` reads raceVerify's verdict
    assert sim.step().terminal is None
    sim.settle("raceVerify", verdict("accepted"))
    final = sim.step()
    assert final.terminal == TerminalDecision(SUCCEEDED) and final.finished


def test_join_first_with_no_satisfier_routes_on_the_raced_control() -> None:
    sim = Sim(fixture_ir("join-first"), USUAL)
    final = sim.run(script({"raceVerify": [verdict("rejected")], "right": [ok()]}))
    assert final.terminal == failed("rejected")


def test_join_first_voids_the_other_branch_once_satisfied() -> None:
    sim = Sim(fixture_ir("join-first"), USUAL)
    sim.step()
    (right,) = sim.active("right")
    sim.settle("raceVerify", verdict("accepted"))
    assert sim.reduce().voids == (VoidLoser(right.execution, "parallel_join"),)


def _writers(sim: Sim) -> None:
    """Drive parallel-success-routed-promotion until both writers have answered."""
    sim.step()
    sim.settle("rightWriter", ok({"result": 9}))
    sim.step()
    sim.settle("leftWriter", ok({"result": 7}))
    sim.step()


def test_par_promotes_only_from_its_winner() -> None:
    sim = Sim(fixture_ir("parallel-success-routed-promotion"), USUAL)
    _writers(sim)
    (left_continued,) = sim.active("leftContinued")
    sim.settle("rightContinued", ok())
    final = sim.step()
    assert final.voids == (VoidLoser(left_continued.execution, "parallel_join"),)
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"result": 9})
    )
    assert Promote("parallel", (), (PromotedValue(("result",), 9),)) in sim.reduce().progress


def test_a_later_winner_is_chosen_by_history_position_not_branch_order() -> None:
    sim = Sim(fixture_ir("parallel-success-routed-promotion"), USUAL)
    _writers(sim)
    sim.settle("leftContinued", ok())
    sim.settle("rightContinued", ok())
    final = sim.reduce()
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"result": 7})
    )
    assert final.voids == ()  # the loser settled before the join was seen: nothing to void


def test_a_terminal_inside_a_branch_is_a_non_completion_not_the_graph_terminal() -> None:
    sim = Sim(fixture_ir("parallel-success-routed-promotion"), USUAL)
    worker = script(
        {"leftWriter": [fails("refusal")], "rightWriter": [ok({"result": 3})]}, default=ok()
    )
    final = sim.run(worker)
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"result": 3})
    )


def test_when_no_branch_completes_the_join_is_unreachable_and_routed() -> None:
    sim = Sim(fixture_ir("parallel-success-routed-promotion"), USUAL)
    crash_twice = [fails("crash"), fails("crash")]
    final = sim.run(script({"leftWriter": crash_twice, "rightWriter": list(crash_twice)}))
    assert final.terminal == failed("rejected")
    assert [e.attempt for e in sim.history] == [1, 1, 2, 2]


def _quorum_of_two() -> CompiledGraphIr:
    def gated(index: int) -> dict[str, Any]:
        rejected = in_(control(f"v{index}", "signal", "verdict"), "rejected")
        return seq(
            f"b{index}",
            verifier(f"v{index}"),
            choice(f"c{index}", (rejected, fail(f"f{index}")), otherwise=step(f"after{index}")),
        )

    reached = in_(control("vote", "group", "joined"), "reached")
    return compiled(
        seq(
            "root",
            par("vote", gated(0), gated(1), gated(2), join={"kind": "quorum", "count": 2}),
            choice("result", (reached, succeed()), otherwise=fail("no_quorum", "no_quorum")),
        )
    )


def test_quorum_is_reached_by_the_earliest_completions_and_voids_the_rest() -> None:
    sim = Sim(_quorum_of_two(), {})
    assert len(sim.step().dispatches) == 3
    sim.settle("v0", verdict("accepted"))
    sim.settle("v1", verdict("accepted"))
    sim.step()
    (v2,) = sim.active("v2")
    sim.settle("after1", ok())
    assert sim.reduce().terminal is None
    sim.settle("after0", ok())
    final = sim.step()
    assert final.voids == (VoidLoser(v2.execution, "parallel_join"),)
    assert final.terminal == TerminalDecision(SUCCEEDED)


def test_quorum_unreachable_when_every_branch_settles_short() -> None:
    sim = Sim(_quorum_of_two(), {})
    worker = script(
        {"v0": [verdict("rejected")], "v1": [verdict("rejected")], "v2": [verdict("accepted")]},
        default=ok(),
    )
    final = sim.run(worker)
    assert final.terminal == failed("no_quorum")
    assert not any(entry.node_instance.startswith("after0") for entry in sim.history)


def test_a_par_inside_a_loop_gets_fresh_instances_for_its_losers_every_iteration() -> None:
    ir = compiled(
        seq(
            "root",
            loop(
                "again", par("race", step("a"), step("b"), join={"kind": "any"}), max_iterations=2
            ),
            succeed(),
        )
    )
    sim = Sim(ir, {})
    sim.step()
    sim.settle("a", ok())
    second = sim.step()  # b#1 is voided, iteration two starts
    assert [d.node_instance for d in second.dispatches] == ["a#2", "b#2"]
    assert [v.reason for v in second.voids] == ["parallel_join"]
    sim.settle("b", ok())
    final = sim.step()
    assert final.terminal == TerminalDecision(SUCCEEDED)
    assert [v.execution for v in final.voids] == [sim.dispatched("a")[1].execution]


# --- loop --------------------------------------------------------------------------------


def test_loop_converges_when_until_holds_and_routes_on_terminated() -> None:
    sim = Sim(fixture_ir("loop-and-group"), USUAL)
    final = sim.run(script({"verify": [verdict("rejected"), verdict("accepted")]}))
    assert final.terminal == TerminalDecision(SUCCEEDED)
    assert nodes(sim.history) == ["verify#1", "verify#2"]
    assert [e.attempt for e in sim.history] == [1, 1]
    assert Continue("repeat") in final.progress


def test_loop_is_exhausted_after_max_iterations() -> None:
    sim = Sim(fixture_ir("loop-and-group"), USUAL)
    final = sim.run(script({}, default=verdict("rejected")))
    assert final.terminal == failed("rejected")
    assert nodes(sim.history) == ["verify#1", "verify#2", "verify#3"]


def test_guards_after_a_loop_read_the_last_outcome_of_each_node() -> None:
    accepted = in_(control("check", "signal", "verdict"), "accepted")
    ir = compiled(
        seq(
            "root",
            loop("retry", verifier("check"), max_iterations=3, until=accepted),
            choice(
                "route",
                (in_(control("check", "error"), "crash"), fail("crashed", "crashed")),
                otherwise=succeed(),
            ),
        )
    )
    sim = Sim(ir, {})
    final = sim.run(script({"check": [fails("crash"), verdict("accepted")]}))
    assert final.terminal == TerminalDecision(SUCCEEDED)
    assert nodes(sim.history) == ["check#1", "check#2"]


def _counter(promote: bool) -> CompiledGraphIr:
    inc = step(
        "inc",
        input=record(n=INT),
        output=record(n=INT),
        inputs=[bind("n", state("n"))],
        writes=[write("n", "inc")],
    )
    exhausted = in_(control("count", "group", "terminated"), "exhausted")
    return compiled(
        seq(
            "root",
            loop("count", inc, max_iterations=3, promote=["n"] if promote else []),
            choice(
                "route",
                (exhausted, succeed(output=record(n=INT), bindings=[bind("n", state("n"))])),
                otherwise=fail("converged", "unexpected"),
            ),
        ),
        initial_input=record(n=INT),
    )


def _increment(entry: HistoryEntry) -> Any:
    return ok({"n": entry.input["n"] + 1})


def test_loop_state_accumulates_across_iterations_and_is_promoted_on_exit() -> None:
    sim = Sim(_counter(promote=True), {"n": 0})
    final = sim.run(_increment)
    assert [e.input for e in sim.history] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert final.terminal == TerminalDecision(SucceededResult(status="succeeded", output={"n": 3}))


def test_loop_writes_that_are_not_promoted_stay_inside() -> None:
    sim = Sim(_counter(promote=False), {"n": 0})
    final = sim.run(_increment)
    assert final.terminal == TerminalDecision(SucceededResult(status="succeeded", output={"n": 0}))


def test_a_terminal_in_a_loop_body_ends_the_whole_graph() -> None:
    body = seq("body", step("work"), fail("stop", "stopped"))
    sim = Sim(compiled(seq("root", loop("again", body, max_iterations=3), succeed())), {})
    assert sim.run(script({}, default=ok())).terminal == failed("stopped")
    assert nodes(sim.history) == ["work#1"]


# --- map ---------------------------------------------------------------------------------


def test_map_items_run_concurrently_and_promote_in_input_order() -> None:
    sim = Sim(fixture_ir("map-indexed-promotion"), {"items": [{"value": 1}, {"value": 2}]})
    first = sim.step()
    assert [(d.node_instance, d.occurrence.map_indices, d.input) for d in first.dispatches] == [
        ("mapWork[0]#1", [0], {"value": 1}),
        ("mapWork[1]#1", [1], {"value": 2}),
    ]
    sim.settle("mapWork", ok({"result": 20}), 1)
    assert sim.reduce().terminal is None
    sim.settle("mapWork", ok({"result": 10}), 0)
    final = sim.reduce()
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"results": [10, 20]})
    )
    assert Promote("map", (), (PromotedValue(("results",), [10, 20]),)) in final.progress
    item_writes = [p for p in final.progress if isinstance(p, Promote) and p.node == "mapWork"]
    assert [p.map_indices for p in item_writes] == [(0,), (1,)]


def test_an_empty_map_promotes_empty_lists_without_dispatching() -> None:
    final = Sim(fixture_ir("map-indexed-promotion"), {"items": []}).reduce()
    assert final.dispatches == ()
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"results": []})
    )


def test_map_overflow_runs_nothing_promotes_nothing_and_continues() -> None:
    items = [{"value": i} for i in range(3)]
    final = Sim(fixture_ir("map-indexed-promotion"), {"items": items, "results": [7]}).reduce()
    assert final.dispatches == ()
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"results": [7]})
    )
    overflow = Sim(fixture_ir("map-signal-and-group"), {**USUAL, "items": items}).reduce()
    assert overflow.dispatches == () and overflow.terminal == TerminalDecision(SUCCEEDED)


def test_an_item_error_leaves_the_promotion_undefined_and_k_of_map_routes_it() -> None:
    sim = Sim(fixture_ir("map-indexed-promotion"), {"items": [{"value": 1}, {"value": 2}]})
    final = sim.run(script({"mapWork[1]": [fails("crash")]}, default=ok({"result": 1})))
    assert final.terminal == failed("rejected")


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ({"mapWork[0]": [ok({"result": 1})], "mapWork[1]": [fails("timeout")]}, SUCCEEDED),
        (
            {"mapWork": [ok({"result": 1}), ok({"result": 2})]},
            FailedResult(status="failed", reason="rejected"),
        ),
    ],
)
def test_k_of_map_counts_item_errors_from_outside_the_map(
    outcomes: dict[str, Any], expected: Any
) -> None:
    sim = Sim(fixture_ir("map-item-k-of-map"), {**USUAL, "items": [{"value": 1}, {"value": 2}]})
    assert sim.run(script(outcomes)).terminal == TerminalDecision(expected)


@pytest.mark.parametrize(
    ("labels", "succeeds"),
    [(("rejected", "accepted"), True), (("rejected", "rejected"), False)],
)
def test_k_of_map_counts_item_signals(labels: tuple[str, str], succeeds: bool) -> None:
    sim = Sim(fixture_ir("map-signal-and-group"), {**USUAL, "items": [{"value": 1}] * 2})
    worker = script({"mapVerify[0]": [verdict(labels[0])], "mapVerify[1]": [verdict(labels[1])]})
    final = sim.run(worker)
    assert final.terminal == (TerminalDecision(SUCCEEDED) if succeeds else failed("rejected"))


def _reviewed_items() -> CompiledGraphIr:
    """Each item: a verifier, then a per-item route; afterwards an `in` over all items."""
    rejected = in_(control("review", "signal", "verdict"), "rejected")
    body = seq(
        "item",
        verifier("review"),
        choice(
            "itemRoute",
            (in_(control("review", "error"), "crash"), fail("itemCrashed", "item_crashed")),
            otherwise=step("polish"),
        ),
    )
    return compiled(
        seq(
            "root",
            map_("each", body, over=state("items"), max_items=4),
            choice(
                "overall", (rejected, fail("someRejected", "some_rejected")), otherwise=succeed()
            ),
        ),
        initial_input=record(items=array(record(value=INT))),
    )


ITEMS = {"items": [{"value": 1}, {"value": 2}, {"value": 3}]}


def test_in_aggregates_over_every_item_from_outside_the_map() -> None:
    sim = Sim(_reviewed_items(), ITEMS)
    reviews = {"review[1]": [verdict("rejected")], "review": [verdict("accepted")] * 2}
    final = sim.run(script(reviews, default=ok()))
    assert final.terminal == failed("some_rejected")
    sim = Sim(_reviewed_items(), ITEMS)
    final = sim.run(script({"review": [verdict("accepted")] * 3}, default=ok()))
    assert final.terminal == TerminalDecision(SUCCEEDED)


def test_inside_an_item_a_selector_reads_only_that_item() -> None:
    sim = Sim(_reviewed_items(), ITEMS)
    sim.step()
    sim.settle("review", verdict("accepted"), 0)
    sim.settle("review", fails("refusal"), 2)
    decisions = sim.step()
    assert [d.node_instance for d in decisions.dispatches] == ["polish[0]#1", "polish[2]#1"]


def test_the_earliest_terminal_in_an_item_ends_the_graph_and_voids_the_other_items() -> None:
    sim = Sim(_reviewed_items(), ITEMS)
    sim.step()
    sim.settle("review", verdict("accepted"), 0)
    sim.step()  # polish[0] dispatched
    (polish,) = sim.active("polish")
    (review2,) = sim.active("review", 2)
    sim.settle("review", fails("crash"), 1)
    ended = sim.step()
    assert ended.terminal == failed("item_crashed")
    assert ended.dispatches == ()
    assert ended.voids == (
        VoidLoser(review2.execution, "map_terminal"),
        VoidLoser(polish.execution, "map_terminal"),
    )
    final = sim.reduce()
    assert final.finished and final.terminal == ended.terminal


def test_the_earliest_terminal_is_chosen_by_history_position() -> None:
    body = seq(
        "item",
        verifier("review"),
        choice(
            "itemRoute",
            (
                in_(control("review", "signal", "verdict"), "accepted"),
                succeed(output=record(value=INT), bindings=[bind("value", item("value"))]),
            ),
            otherwise=step("retry"),
        ),
    )
    ir = compiled(
        seq("root", map_("each", body, over=state("items"), max_items=4), succeed("empty")),
        initial_input=record(items=array(record(value=INT))),
    )
    sim = Sim(ir, ITEMS)
    sim.step()
    sim.settle("review", verdict("accepted"), 2)
    sim.settle("review", verdict("accepted"), 0)
    final = sim.step()
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"value": 3})
    )
    assert [v.reason for v in final.voids] == ["map_terminal"]


def test_nested_par_map_loop_runs_items_and_iterations_with_stable_instances() -> None:
    sim = Sim(fixture_ir("nested-structural-folds"), {**USUAL, "items": [{"value": 1}] * 2})
    first = sim.step()
    assert [d.node_instance for d in first.dispatches] == ["verify[0]#1", "verify[1]#1", "peer#1"]
    sim.settle("verify", verdict("rejected"), 0)
    sim.settle("verify", verdict("accepted"), 1)
    sim.settle("peer", ok())
    second = sim.step()
    assert [d.node_instance for d in second.dispatches] == ["verify[0]#2"]
    assert second.dispatches[0].occurrence.map_indices == [0]
    sim.settle("verify", verdict("rejected"), 0)  # second iteration: exhausted
    final = sim.reduce()
    assert final.terminal == TerminalDecision(SUCCEEDED) and final.finished


def test_a_map_over_optional_results_keeps_what_the_parent_had_when_not_promoted() -> None:
    body = step("noop")
    ir = compiled(
        seq(
            "root",
            map_("each", body, over=state("items"), max_items=2),
            succeed(
                output=record(results=array(INT)), bindings=[bind("results", state("results"))]
            ),
        ),
        initial_input=record(items=array(INT), results=optional(array(INT))),
    )
    final = Sim(ir, {"items": [1], "results": [4]}).run(script({}, default=ok()))
    assert final.terminal == TerminalDecision(
        SucceededResult(status="succeeded", output={"results": [4]})
    )
