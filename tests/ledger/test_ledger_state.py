"""The event rules, checked on the pure projection (no database)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ledger_events import (
    attached,
    completed,
    crashed,
    failed,
    log,
    one_of_each_kind,
    ref,
    started,
    succeeded,
    voided,
)

from zeroshot_kernel.ledger import (
    EVENT_KINDS,
    Active,
    Completed,
    EventRejected,
    RunSnapshot,
    Voided,
    admitted_snapshot,
    apply,
    replay,
)
from zeroshot_kernel.ledger.events import (
    ExecutionReference,
    ForceStopRequested,
    RunEvent,
    RunStarted,
)

RUN = "run-aaaaaaaaaaaa"


def fresh() -> RunSnapshot:
    return admitted_snapshot(RUN, "a run")


def running() -> RunSnapshot:
    return replay(fresh(), [RunStarted()])


def rejected(snapshot: RunSnapshot, *events: RunEvent) -> EventRejected:
    with pytest.raises(EventRejected) as caught:
        replay(snapshot, list(events))
    return caught.value


def test_a_full_history_projects_phases_executions_and_terminal() -> None:
    snapshot = replay(fresh(), one_of_each_kind(RUN))
    assert snapshot.cursor == "v2:9"
    assert snapshot.phase == "finished"
    assert snapshot.force_stop_requested
    assert snapshot.terminal is not None and snapshot.terminal.status == "succeeded"
    first, second = snapshot.executions["e1"], snapshot.executions["e2"]
    assert first.started_at == "v2:3"
    assert isinstance(first.state, Completed) and first.state.at == "v2:6"
    assert first.state.outcome.status == "verified"
    assert isinstance(second.state, Voided) and second.state.reason == "parallel_join"
    assert snapshot.active() == []


def test_the_history_helper_covers_every_event_kind() -> None:
    assert {event.kind for event in one_of_each_kind(RUN)} == EVENT_KINDS


def test_apply_is_pure_and_moves_the_cursor_by_one() -> None:
    before = fresh()
    after = apply(before, RunStarted(), "v2:1")
    assert (before.phase, before.cursor) == ("admitted", "v2:0")
    assert (after.phase, after.cursor) == ("running", "v2:1")
    with pytest.raises(ValueError, match="does not follow"):
        apply(after, attached(), "v2:3")


def test_snapshot_survives_its_wire_form() -> None:
    snapshot = replay(fresh(), one_of_each_kind(RUN)[:6])
    assert RunSnapshot.model_validate_json(snapshot.model_dump_json()) == snapshot
    assert set(snapshot.to_wire()) == {
        "runId", "title", "cursor", "phase", "forceStopRequested", "executions", "terminal",
    }  # fmt: skip


# -- run_started ------------------------------------------------------------------------


def test_run_started_only_while_admitted() -> None:
    assert rejected(running(), RunStarted()).rule.startswith("run_started is valid only")
    stopping = replay(fresh(), [ForceStopRequested()])
    assert stopping.phase == "stopping"
    assert rejected(stopping, RunStarted()).kind == "run_started"


# -- node_started -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        pytest.param([], id="admitted"),
        pytest.param([RunStarted(), ForceStopRequested()], id="stopping"),
    ],
)
def test_node_started_needs_a_running_run(history: list[RunEvent]) -> None:
    snapshot = replay(fresh(), history)
    error = rejected(snapshot, started(ref(RUN)))
    assert "requires a running run" in error.rule


def test_node_started_needs_a_new_execution_id() -> None:
    snapshot = replay(running(), [started(ref(RUN, 1)), completed(ref(RUN, 1))])
    retry_with_same_id = started(ref(RUN, 1), attempt=2)
    assert "already dispatched" in rejected(snapshot, retry_with_same_id).rule
    assert replay(snapshot, [started(ref(RUN, 2), attempt=2)]).executions["e2"].attempt == 2


def test_node_started_must_name_this_run() -> None:
    other = ref("run-bbbbbbbbbbbb")
    assert "belongs to run" in rejected(running(), started(other)).rule


# -- completing and voiding -------------------------------------------------------------


@pytest.mark.parametrize(
    "settle", [completed, crashed, voided], ids=["completed", "crashed", "voided"]
)
def test_settling_needs_a_matching_active_execution(
    settle: Callable[[ExecutionReference], RunEvent],
) -> None:
    dispatched = replay(running(), [started(ref(RUN, 1))])
    assert "never dispatched" in rejected(dispatched, settle(ref(RUN, 2))).rule
    other_instance = ExecutionReference(
        run_id=RUN, node="worker", node_instance="worker#9", execution="e1"
    )
    assert "does not match" in rejected(dispatched, settle(other_instance)).rule
    other_run = ref("run-bbbbbbbbbbbb", 1)
    assert "belongs to run" in rejected(dispatched, settle(other_run)).rule
    settled = replay(dispatched, [settle(ref(RUN, 1))])
    assert not isinstance(settled.executions["e1"].state, Active)
    for again in (completed, voided):
        assert "is already" in rejected(settled, again(ref(RUN, 1))).rule


# -- safe_log and controller_attached ---------------------------------------------------


def test_safe_log_may_name_only_dispatched_executions() -> None:
    snapshot = replay(running(), [started(ref(RUN, 1)), completed(ref(RUN, 1))])
    assert replay(snapshot, [log("late line", "e1"), log("run line")]).cursor == "v2:5"
    assert "never dispatched" in rejected(snapshot, log("x", "e7")).rule


@pytest.mark.parametrize(
    "history",
    [
        pytest.param([], id="admitted"),
        pytest.param([RunStarted()], id="running"),
        pytest.param([RunStarted(), ForceStopRequested()], id="stopping"),
    ],
)
def test_logs_and_controller_attachments_are_allowed_until_terminal(
    history: list[RunEvent],
) -> None:
    snapshot = replay(fresh(), [*history, attached(), log("hello"), attached(resumed=True)])
    assert snapshot.cursor == f"v2:{len(history) + 3}"


# -- force stop -------------------------------------------------------------------------


def test_force_stop_at_most_once_and_moves_to_stopping() -> None:
    snapshot = replay(running(), [started(ref(RUN)), ForceStopRequested()])
    assert snapshot.phase == "stopping" and snapshot.force_stop_requested
    assert "already requested" in rejected(snapshot, ForceStopRequested()).rule
    closed = replay(snapshot, [crashed(ref(RUN)), failed("force_stopped")])
    assert closed.phase == "finished"


# -- terminal ---------------------------------------------------------------------------


def test_terminal_needs_nothing_active() -> None:
    snapshot = replay(
        running(), [started(ref(RUN, 1)), started(ref(RUN, 2)), completed(ref(RUN, 1))]
    )
    assert "no execution is active" in rejected(snapshot, succeeded()).rule
    assert replay(snapshot, [voided(ref(RUN, 2)), succeeded()]).phase == "finished"


def test_terminal_is_allowed_before_the_run_started() -> None:
    assert replay(fresh(), [failed("runtime_unavailable")]).phase == "finished"


@pytest.mark.parametrize(
    "event",
    [event for event in one_of_each_kind(RUN) if event.kind != "terminal"]
    + [succeeded(), failed()],
    ids=lambda event: event.kind,
)
def test_nothing_follows_terminal(event: RunEvent) -> None:
    finished = replay(fresh(), one_of_each_kind(RUN))
    assert rejected(finished, event).rule == "nothing may follow terminal"


def test_a_rejection_names_its_position_in_the_batch() -> None:
    error = rejected(running(), started(ref(RUN, 1)), log("x", "e1"), started(ref(RUN, 1)))
    assert (error.position, error.kind) == (2, "node_started")
    assert "batch position 2" in str(error) and "already dispatched" in str(error)
