"""The reducer's memo changes nothing: every reduction equals one by a reducer that never
saw the run before (a fresh copy of the graph has no memo), whatever order histories come
in, including histories that rewrite entries the memo relied on."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from reducer_sim import (
    INT,
    RUN_ID,
    Sim,
    array,
    bind,
    compiled,
    fails,
    history_at,
    in_,
    item,
    loop,
    map_,
    ok,
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
from zeroshot_kernel.engine.decisions import Decisions
from zeroshot_kernel.engine.history import (
    History,
    HistoryBook,
    HistoryEntry,
    Settled,
    history_entry,
)
from zeroshot_kernel.engine.memo import same_json
from zeroshot_kernel.engine.reducer import reduce
from zeroshot_kernel.ledger import admitted_snapshot, replay
from zeroshot_kernel.ledger.events import (
    Completion,
    ExecutionReference,
    ExecutionVoided,
    NodeCompleted,
    NodeStarted,
    Occurrence,
    RunEvent,
    RunStarted,
)

N = record(n=INT)


def counter(name: str, attempts: int = 1) -> dict[str, Any]:
    """A step that reads ``n`` and writes its output's ``n`` back."""
    return step(
        name,
        input=N,
        output=N,
        inputs=[bind("n", state("n"))],
        writes=[write("n", name)],
        attempts=attempts,
    )


def chain(prefix: str, length: int) -> list[dict[str, Any]]:
    return [counter(f"{prefix}{i}") for i in range(length)]


GRAPHS = {
    "long seq": seq("root", *chain("s", 12), succeed(), state_type=N),
    "nested seqs": seq(
        "root",
        seq(
            "a",
            *chain("a", 3),
            seq("aa", *chain("aa", 3), state_type=N),
            promote=["n"],
            state_type=N,
        ),
        counter("mid", attempts=3),
        seq(
            "b",
            seq("bb", *chain("bb", 2), state_type=N),
            *chain("b", 2),
            promote=["n"],
            state_type=N,
        ),
        succeed(),
        state_type=N,
    ),
    "par joins in a seq": seq(
        "root",
        *chain("p", 2),
        par("any", counter("l1"), seq("r", *chain("r", 2), state_type=N), join={"kind": "any"}),
        par("all", counter("x"), counter("y"), join={"kind": "all"}),
        *chain("q", 2),
        succeed(),
        state_type=N,
    ),
    "loop, map and verifier": seq(
        "root",
        counter("first"),
        loop(
            "again",
            seq("body", counter("work"), verifier("check"), state_type=N),
            max_iterations=3,
            until=in_({"name": "check", "source": "signal", "field": "verdict"}, "accepted"),
        ),
        map_(
            "each",
            step("per", input=N, output=N, inputs=[bind("n", item("n"))]),
            over=state("items"),
            max_items=4,
        ),
        counter("last"),
        succeed(),
        state_type=record(n=INT, items=array(N)),
    ),
    "loops in loops": seq(
        "root",
        loop(
            "rounds",
            seq(
                "round",
                counter("open"),
                loop(
                    "passes",
                    seq("pass", counter("work"), verifier("check"), state_type=N),
                    max_iterations=3,
                    until=in_(
                        {"name": "check", "source": "signal", "field": "verdict"}, "accepted"
                    ),
                ),
                counter("close"),
                state_type=N,
            ),
            max_iterations=6,
        ),
        counter("after"),
        succeed(),
        state_type=N,
    ),
}
INPUTS: dict[str, Any] = {"loop, map and verifier": {"n": 1, "items": [{"n": 1}, {"n": 2}]}}


def outcomes(seed: int) -> Any:
    """Mostly successes, some crashes (retries) and rejected verdicts (more loop turns)."""
    chooser = random.Random(seed)

    def worker(entry: HistoryEntry) -> Any:
        if entry.occurrence.node == "check":
            return verdict(chooser.choice(["accepted", "rejected"]))
        if chooser.random() < 0.15:
            return fails("crash")
        return ok({"n": chooser.randrange(100)})

    return worker


def fresh(ir: CompiledGraphIr) -> CompiledGraphIr:
    """An equal graph the reducer has never seen (its memo is per graph object)."""
    return CompiledGraphIr.from_wire(ir.to_wire())


def outcome_of(ir: CompiledGraphIr, initial: Any, history: Any) -> Decisions | str:
    try:
        return reduce(ir, initial, history, run_id=RUN_ID)
    except Exception as error:  # the memo must not change errors either
        return f"{type(error).__name__}: {error}"


def indexed(entries: list[HistoryEntry]) -> History:
    """The same history with the tables a ``HistoryBook`` attaches (and no base)."""
    history = History(entries)
    history.by_execution = {entry.execution: entry for entry in entries}
    history.by_attempt = {(entry.node_instance, entry.attempt): entry for entry in entries}
    history.unsettled = [entry for entry in entries if not isinstance(entry.state, Settled)]
    history.base, history.changed = None, frozenset()
    return history


class CheckedSim(Sim):
    def reduce(self) -> Decisions:
        decisions = super().reduce()
        history = self.history
        assert decisions == outcome_of(fresh(self.ir), self.initial_input, history)
        assert decisions == outcome_of(self.ir, self.initial_input, indexed(history))
        return decisions


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("seed", range(4))
def test_every_reduction_of_a_run_equals_a_fresh_one(name: str, seed: int) -> None:
    sim = CheckedSim(compiled(GRAPHS[name], GRAPHS[name].get("state")), INPUTS.get(name, {"n": 0}))
    sim.run(outcomes(seed), rounds=200)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_histories_in_any_order_reduce_as_fresh(name: str) -> None:
    """Every past state of a finished run, shuffled, through one graph object: the memo
    left by one history is checked, never trusted, by the next."""
    initial = INPUTS.get(name, {"n": 0})
    ir = compiled(GRAPHS[name], GRAPHS[name].get("state"))
    sim = Sim(ir, initial)
    sim.run(outcomes(7), rounds=200)
    positions = list(range(sim.position + 1))
    random.Random(3).shuffle(positions)
    for position in positions:
        past = history_at(sim.history, position)
        assert outcome_of(ir, initial, past) == outcome_of(fresh(ir), initial, past)


@pytest.mark.parametrize(
    "rewrite",
    [
        pytest.param(
            lambda e: dataclasses.replace(e, input={"n": float(e.input["n"])}),
            id="int-input-becomes-float",
        ),
        pytest.param(
            lambda e: dataclasses.replace(e, state=Settled(e.state.position, ok({"n": 1.0}))),
            id="output-becomes-float",
        ),
        pytest.param(
            lambda e: dataclasses.replace(e, state=Settled(e.state.position, fails("crash"))),
            id="success-becomes-crash",
        ),
        pytest.param(
            lambda e: dataclasses.replace(e, dispatch_position=e.dispatch_position), id="equal-copy"
        ),
    ],
)
def test_a_rewritten_early_entry_is_seen_after_the_memo_took_it(rewrite: Any) -> None:
    ir = compiled(GRAPHS["long seq"], N)
    sim = Sim(ir, {"n": 0})
    sim.run(script({}, default=ok({"n": 1})), rounds=200)
    history = sim.history
    assert outcome_of(ir, {"n": 0}, history) == outcome_of(fresh(ir), {"n": 0}, history)
    changed = [rewrite(history[0]), *history[1:]]
    assert outcome_of(ir, {"n": 0}, changed) == outcome_of(fresh(ir), {"n": 0}, changed)


def test_a_changed_initial_input_is_not_the_remembered_one() -> None:
    ir = compiled(GRAPHS["long seq"], N)
    sim = Sim(ir, {"n": 0})
    sim.run(script({}, default=ok({"n": 1})), rounds=200)
    assert isinstance(outcome_of(ir, {"n": 0}, sim.history), Decisions)
    assert "different input" in str(outcome_of(ir, {"n": 0.0}, sim.history))


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, 1), ("x", "x"), ([1, {"a": None}], [1, {"a": None}]),
     ({"a": 1, "b": 2}, {"b": 2, "a": 1}), (1, 1.0), (True, 1), (0.0, -0.0),
     ({"a": 1}, {"a": 1, "b": 2}), ([1], (1,)), ({1: "x"}, {"1": "x"}),
     (float("nan"), float("nan")), ("é", "é"), ([[]], [{}])],
)  # fmt: skip
def test_same_json_is_canonical_equality(a: Any, b: Any) -> None:
    from zeroshot_kernel.contract.canonical import dump_canonical

    canonical = dump_canonical(a, allow_floats=True) == dump_canonical(b, allow_floats=True)
    assert same_json(a, b) == canonical == same_json(b, a)


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("seed", range(3))
def test_a_controller_reducing_book_histories_decides_as_fresh(name: str, seed: int) -> None:
    """Snapshots folded from events, histories from a ``HistoryBook``, as the controller
    would: each reduction (most resumed on the changed entries alone) equals a fresh one."""
    initial = INPUTS.get(name, {"n": 0})
    ir = compiled(GRAPHS[name], GRAPHS[name].get("state"))
    worker = outcomes(seed)
    snapshot = replay(admitted_snapshot(RUN_ID, "t"), [RunStarted()])
    book = HistoryBook()
    for _ in range(400):
        history = book.entries(snapshot)
        _tables_agree(history)
        decisions = reduce(ir, initial, history, run_id=RUN_ID)
        assert decisions == outcome_of(fresh(ir), initial, list(history))
        assert decisions == reduce(ir, initial, history, run_id=RUN_ID)  # the same, again
        references = {e.reference.execution: e.reference for e in snapshot.executions.values()}
        events: list[RunEvent]
        if decisions.voids:
            events = [
                ExecutionVoided(reference=references[void.execution], reason=void.reason)
                for void in decisions.voids
            ]
        elif decisions.finished:
            return
        elif decisions.dispatches:
            events = [
                NodeStarted(
                    reference=ExecutionReference(
                        run_id=RUN_ID,
                        node=d.occurrence.node,
                        node_instance=d.node_instance,
                        execution=d.execution,
                    ),
                    occurrence=d.occurrence,
                    attempt=d.attempt,
                    input=d.input,
                )
                for d in decisions.dispatches
            ]
        else:
            waiting = history.by_execution[decisions.waiting[0]]
            outcome = worker(waiting)
            events = [
                NodeCompleted(
                    completion=Completion(reference=references[waiting.execution], outcome=outcome)
                )
            ]
        snapshot = replay(snapshot, events)
    raise AssertionError("the run did not finish")


def _tables_agree(history: History) -> None:
    assert history.by_execution == {entry.execution: entry for entry in history}
    assert history.by_attempt == {(e.node_instance, e.attempt): e for e in history}
    assert history.unsettled == [e for e in history if not isinstance(e.state, Settled)]


def test_the_history_book_keeps_unchanged_entries_and_converts_like_history_entry() -> None:
    run = "run-aaaaaaaaaaaa"
    refs = [
        ExecutionReference(run_id=run, node="w", node_instance=f"w#{i}", execution=f"e{i}")
        for i in (1, 2, 3)
    ]
    started = [
        NodeStarted(reference=r, occurrence=Occurrence(node="w"), attempt=1, input={"n": 1})
        for r in refs
    ]
    snapshot = replay(admitted_snapshot(run, "t"), [RunStarted(), *started[:2]])
    book = HistoryBook()
    first = book.entries(snapshot)
    assert list(first) == [history_entry(e) for e in snapshot.executions.values()]
    _tables_agree(first)
    done = NodeCompleted(completion=Completion(reference=refs[0], outcome=ok({"n": 2})))
    later = replay(snapshot, [done, started[2]])
    second = book.entries(later)
    assert list(second) == [history_entry(e) for e in later.executions.values()]
    _tables_agree(second)
    assert second[1] is first[1] and second[0] is not first[0]
    assert isinstance(second[0].state, Settled) and second[0].state.position == 4
    assert list(book.entries(snapshot)) == list(first)  # a history that went back: rebuilt
    _tables_agree(book.entries(later))


def test_a_book_history_with_two_claims_on_one_attempt_is_still_a_mismatch() -> None:
    run = RUN_ID
    ir = compiled(GRAPHS["long seq"], N)
    sim = Sim(ir, {"n": 0})
    sim.step()
    (entry,) = sim.history
    references = [
        ExecutionReference(
            run_id=run, node="s0", node_instance=entry.node_instance, execution=execution
        )
        for execution in (entry.execution, "another")
    ]
    events = [
        NodeStarted(reference=r, occurrence=entry.occurrence, attempt=1, input={"n": 0})
        for r in references
    ]
    history = HistoryBook().entries(replay(admitted_snapshot(run, "t"), [RunStarted(), *events]))
    assert "recorded twice" in str(outcome_of(ir, {"n": 0}, history))
