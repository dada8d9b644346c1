"""Every node kind, join and control, run end to end: a detached controller, python workers
in worker processes, a real SQLite ledger. Each test checks the terminal result and the
event sequence (per causal chain, so legitimate concurrency may interleave chains)."""

from __future__ import annotations

import asyncio

import engine_graphs as g
import pytest
from engine_support import (
    Workspace,
    assert_single_terminal_last,
    assert_trace,
    finish,
    trace,
    wire,
)
from support import alive, wait_until

from zeroshot_kernel.admission.admit import admit
from zeroshot_kernel.client import Run
from zeroshot_kernel.ledger.events import NodeStarted

# slow: a detached controller and worker processes per test
pytestmark = pytest.mark.slow


def test_seq_runs_children_in_order(ws: Workspace) -> None:
    run = ws.submit(g.seq_graph(), {"value": 3})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 8}}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started inc#1",
            "completed inc#1 ok",
            "started double#1",
            "completed double#1 ok",
            "terminal succeeded",
        ],
    )
    # Each line under its own execution: stdout as output, stderr as error, none lost (the
    # stderr line is written just before the worker returns).
    executions = {_execution(run, "inc#1"): "inc", _execution(run, "double#1"): "double"}
    assert [(executions[log.execution or ""], log.stream, log.line) for _, log in run.logs()] == [
        ("inc", "output", "inc 3"),
        ("inc", "error", "inc 3 done"),
        ("double", "output", "double 4"),
    ]
    assert_single_terminal_last(run)


def test_an_in_process_controller_runs_the_same_graph(ws: Workspace) -> None:
    """A controller on a thread of this process (as for notebook-defined workers), the
    workers called in this process too; awaited with ``result()``."""
    graph, runtime = g.seq_graph()
    run = ws.client.submit(graph, input={"value": 3}, runtime=runtime, in_process=True)
    assert wire(asyncio.run(asyncio.wait_for(run.aresult(poll_s=0.02), 30))) == {
        "status": "succeeded",
        "output": {"value": 8},
    }
    assert_trace(
        trace(run),
        [
            "run_started",
            "started inc#1",
            "completed inc#1 ok",
            "started double#1",
            "completed double#1 ok",
            "terminal succeeded",
        ],
    )
    assert {e["node"] for e in ws.effects()} == {"inc", "double"}


@pytest.mark.parametrize(
    ("value", "result", "verdict"),
    [
        (12, {"status": "succeeded", "output": {"value": 12}}, "size=big,verdict=accepted"),
        (3, {"status": "failed", "reason": "otherwise"}, "size=small,verdict=rejected"),
    ],
    ids=["first-true-branch-wins", "otherwise"],
)
def test_choice_takes_the_first_true_branch_else_otherwise(
    ws: Workspace, value: int, result: dict[str, object], verdict: str
) -> None:
    run = ws.submit(g.choice_graph(), {"value": value})
    assert wire(finish(run)) == result
    terminal = "succeeded" if result["status"] == "succeeded" else f"failed/{result['reason']}"
    assert_trace(
        trace(run),
        ["run_started", "started judge#1", f"completed judge#1 {verdict}", f"terminal {terminal}"],
    )


def _branch_chain(name: str) -> list[str]:
    """A guarded par branch that completes: its writer, then its ``_ok`` step."""
    return [
        "run_started",
        f"started {name}#1",
        f"completed {name}#1 ok",
        f"started {name}_ok#1",
        f"completed {name}_ok#1 ok",
    ]


def test_par_all_joins_every_branch_and_promotes_each_write(ws: Workspace) -> None:
    run = ws.submit(g.par_all_graph(), {"value": 1})
    assert wire(finish(run)) == {
        "status": "succeeded",
        "output": {"left": "left", "right": "right"},
    }
    assert_trace(
        trace(run),
        [*_branch_chain("left"), "terminal succeeded"],
        [*_branch_chain("right"), "terminal succeeded"],
    )


def test_par_any_first_completion_wins_and_the_loser_is_voided_and_killed(
    ws: Workspace,
) -> None:
    ws.behave(a={"wait_for_workers": 2}, b={"sleep": 60})
    run = ws.submit(g.par_graph({"kind": "any"}, ["a", "b"]), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"winner": "a"}}
    items = trace(run)
    assert_trace(
        items,
        [*_branch_chain("a"), "voided b#1 parallel_join", "terminal succeeded"],
        ["run_started", "started b#1", "voided b#1 parallel_join"],
    )
    loser = _execution(run, "b#1")
    wait_until(lambda: not alive(ws.pid(loser)), 5, "the voided worker to be killed")


def test_par_quorum_takes_the_earliest_completions_in_order(ws: Workspace) -> None:
    # b answers once a's and a_ok's completions are recorded.
    ws.behave(b={"wait_for_completions": 2}, c={"sleep": 60})
    run = ws.submit(g.par_graph({"kind": "quorum", "count": 2}, ["a", "b", "c"]), {"value": 1})
    # Both winners wrote ``winner``; their writes apply in completion order, b's last.
    assert wire(finish(run)) == {"status": "succeeded", "output": {"winner": "b"}}
    assert_trace(
        trace(run),
        [
            *_branch_chain("a"),
            *_branch_chain("b")[3:],
            "voided c#1 parallel_join",
            "terminal succeeded",
        ],
        [*_branch_chain("b"), "voided c#1 parallel_join"],
        ["run_started", "started c#1", "voided c#1 parallel_join"],
    )


def test_par_quorum_unreachable_keeps_going_and_routes_on_joined(ws: Workspace) -> None:
    ws.behave(b={"crash_until": 99}, c={"crash_until": 99})
    run = ws.submit(g.par_graph({"kind": "quorum", "count": 2}, ["a", "b", "c"]), {"value": 1})
    assert wire(finish(run)) == {"status": "failed", "reason": "unreachable"}
    assert_trace(
        trace(run),
        [*_branch_chain("a"), "terminal failed/unreachable"],
        ["run_started", "started b#1", "completed b#1 crash", "terminal failed/unreachable"],
        ["run_started", "started c#1", "completed c#1 crash", "terminal failed/unreachable"],
    )


def test_par_first_counts_only_completions_satisfying_when(ws: Workspace) -> None:
    ws.behave(a={"reject": True}, b={"wait_for_completions": 1}, c={"sleep": 60})
    run = ws.submit(g.par_first_graph(["a", "b", "c"], "b"), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": None}
    assert_trace(
        trace(run),
        ["run_started", "started a#1", "completed a#1 verdict=rejected"],
        [
            "run_started",
            "started b#1",
            "completed b#1 verdict=accepted",
            "voided c#1 parallel_join",
            "terminal succeeded",
        ],
        ["run_started", "started c#1", "voided c#1 parallel_join"],
    )


def test_par_first_without_a_satisfier_routes_no_satisfier(ws: Workspace) -> None:
    ws.behave(b={"reject": True})
    run = ws.submit(g.par_first_graph(["a", "b"], "b"), {"value": 1})
    assert wire(finish(run)) == {"status": "failed", "reason": "unreachable"}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started a#1",
            "completed a#1 verdict=accepted",
            "terminal failed/unreachable",
        ],
        [
            "run_started",
            "started b#1",
            "completed b#1 verdict=rejected",
            "terminal failed/unreachable",
        ],
    )


def test_loop_converges_when_until_holds(ws: Workspace) -> None:
    run = ws.submit(g.loop_graph(), {"value": 1})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"value": 3}}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started bump#1",
            "completed bump#1 ok",
            "started gate#1",
            "completed gate#1 verdict=rejected",
            "started bump#2",
            "completed bump#2 ok",
            "started gate#2",
            "completed gate#2 verdict=accepted",
            "terminal succeeded",
        ],
    )


def test_loop_exhausted_after_max_iterations_routes_terminated(ws: Workspace) -> None:
    run = ws.submit(g.loop_graph(max_iterations=2), {"value": -5})
    assert wire(finish(run)) == {"status": "failed", "reason": "exhausted"}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started bump#1",
            "completed bump#1 ok",
            "started gate#1",
            "completed gate#1 verdict=rejected",
            "started bump#2",
            "completed bump#2 ok",
            "started gate#2",
            "completed gate#2 verdict=rejected",
            "terminal failed/exhausted",
        ],
    )


def test_map_runs_items_concurrently_and_promotes_by_index(ws: Workspace) -> None:
    # The first item finishes last: promotion still follows the input order.
    ws.behave(square={"wait_for_effects": {"3": 2}})
    run = ws.submit(g.map_graph(), {"items": [{"n": 3}, {"n": 1}, {"n": 2}]})
    assert wire(finish(run)) == {"status": "succeeded", "output": {"results": [9, 1, 4]}}
    chains = [
        [
            "run_started",
            f"started square[{i}]#1",
            f"completed square[{i}]#1 ok",
            "terminal succeeded",
        ]
        for i in range(3)
    ]
    items = trace(run)
    assert_trace(items, *chains)
    # Item 0 waits for the other items' effects, so it can only finish if they ran
    # alongside it: every item started before item 0 completed.
    assert items.index("completed square[0]#1 ok") > max(
        items.index(f"started square[{i}]#1") for i in range(3)
    )


def test_map_overflow_runs_nothing_and_routes_overflow(ws: Workspace) -> None:
    run = ws.submit(g.map_graph(max_items=2), {"items": [{"n": 1}, {"n": 2}, {"n": 3}]})
    assert wire(finish(run)) == {"status": "failed", "reason": "overflow"}
    assert_trace(trace(run), ["run_started", "terminal failed/overflow"])


def test_map_item_error_is_aggregated_by_k_of_map(ws: Workspace) -> None:
    run = ws.submit(g.map_graph(), {"items": [{"n": 1}, {"n": -2}]})
    assert wire(finish(run)) == {"status": "failed", "reason": "item_failed"}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started square[0]#1",
            "completed square[0]#1 ok",
            "terminal failed/item_failed",
        ],
        [
            "run_started",
            "started square[1]#1",
            "completed square[1]#1 crash",
            "terminal failed/item_failed",
        ],
    )


def test_terminal_inside_a_map_item_ends_the_graph_and_voids_the_other_items(
    ws: Workspace,
) -> None:
    # The bad item's check answers once the other items' checks and settles started.
    ws.behave(check={"wait_for_workers": {"-1": 5}}, settle={"sleep": 60})
    run = ws.submit(g.map_terminal_graph(), {"items": [{"n": 1}, {"n": -1}, {"n": 2}]})
    assert wire(finish(run)) == {"status": "failed", "reason": "bad_item"}
    assert_trace(
        trace(run),
        [
            "run_started",
            "started check[0]#1",
            "completed check[0]#1 sign=pos",
            "started settle[0]#1",
            "voided settle[0]#1 map_terminal",
            "terminal failed/bad_item",
        ],
        [
            "run_started",
            "started check[2]#1",
            "completed check[2]#1 sign=pos",
            "started settle[2]#1",
            "voided settle[2]#1 map_terminal",
            "terminal failed/bad_item",
        ],
        [
            "run_started",
            "started check[1]#1",
            "completed check[1]#1 sign=neg",
            "voided settle[0]#1 map_terminal",
        ],
    )
    for instance in ("settle[0]#1", "settle[2]#1"):
        pid = ws.pid(_execution(run, instance))
        wait_until(lambda pid=pid: not alive(pid), 5, f"{instance} to be killed")


def test_verifier_signal_diagnostic_and_output_are_written(ws: Workspace) -> None:
    run = ws.submit(g.verifier_writes_graph(), {"value": -1})
    assert wire(finish(run)) == {
        "status": "succeeded",
        "output": {"value": -10, "verdict": "rejected", "note": "too small", "score": -1},
    }
    assert_trace(
        trace(run),
        [
            "run_started",
            "started review#1",
            "completed review#1 verdict=rejected",
            "terminal succeeded",
        ],
    )


EVERY_KIND_INPUT = {
    "count": 0,
    "enabled": True,
    "items": [{"text": "ab"}, {"text": "cde"}],
    "text": "hello",
    "ratio": 0.5,
}


def test_every_node_kind_in_one_graph(ws: Workspace) -> None:
    """The repaired ``full-all-nodes`` graph: step, verifier, seq, choice, par under
    all/any/quorum/first, loop, map, succeed and fail, with every guard kind (in, all, any,
    not, k_of_n, k_of_map)."""
    slow = {"sleep": 60}
    ws.behave(joinAnyRight=slow, joinQuorumRight=slow, joinFirstRight=slow)
    run = ws.submit(g.every_kind_graph(), EVERY_KIND_INPUT)
    assert wire(finish(run)) == {
        "status": "succeeded",
        "output": {"text": "HELLO", "count": 2, "lengths": [2, 3]},
    }

    def ran(instance: str, outcome: str = "ok") -> list[str]:
        return [f"started {instance}", f"completed {instance} {outcome}"]

    def lost(instance: str, after: str) -> list[str]:
        return [after, f"started {instance}", f"voided {instance} parallel_join"]

    accepted, rejected = "verdict=accepted", "verdict=rejected"
    main = [
        "run_started",
        *ran("work#1"),
        *ran("verify#1", accepted),
        *ran("proceed#1"),
        *ran("joinAllLeft#1"),
        *ran("joinAnyLeft#1"),
        "voided joinAnyRight#1 parallel_join",
        *ran("joinQuorumLeft#1"),
        "voided joinQuorumRight#1 parallel_join",
        *ran("joinFirstLeft#1", accepted),
        "voided joinFirstRight#1 parallel_join",
        *ran("loopStep#1"),
        *ran("loopCheck#1", rejected),
        *ran("loopStep#2"),
        *ran("loopCheck#2", accepted),
        *ran("mapBody[0]#1"),
        "terminal succeeded",
    ]
    assert_trace(
        trace(run),
        main,
        ["completed proceed#1 ok", *ran("joinAllRight#1"), "started joinAnyLeft#1"],
        lost("joinAnyRight#1", "completed joinAllRight#1 ok"),
        lost("joinQuorumRight#1", "voided joinAnyRight#1 parallel_join"),
        lost("joinFirstRight#1", "voided joinQuorumRight#1 parallel_join"),
        ["completed loopCheck#2 verdict=accepted", *ran("mapBody[1]#1"), "terminal succeeded"],
    )


def test_a_first_join_may_race_on_any_racer_verdict() -> None:
    """``when`` is evaluated on each branch's own controls; another racer's are unset there
    and match nothing, so "a or b accepted" is satisfiable on either branch."""
    graph, runtime = g.par_first_graph(["a", "b"], "b")
    join = graph["root"]["children"][0]["join"]
    join["when"] = {
        "kind": "any",
        "guards": [g.signalled(name, "verdict", "accepted") for name in ("a", "b")],
    }
    admission = admit(graph, initial_input={"value": 1}, runtime=runtime)
    assert admission.ok, [d.message for d in admission.diagnostics]


def _execution(run: Run, instance: str) -> str:
    for _, event in run.events():
        if isinstance(event, NodeStarted) and event.reference.node_instance == instance:
            return event.reference.execution
    raise AssertionError(f"{instance} never started")
