"""The ledger store on a real database: runs, idempotency, atomic batches, cursors, tails."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from ledger_events import (
    ADMITTED,
    attached,
    completed,
    crashed,
    failed,
    log,
    one_of_each_kind,
    ref,
    started,
    succeeded,
)

from zeroshot_kernel.ledger import (
    SCHEMA_VERSION,
    CursorAhead,
    EventRejected,
    IdempotencyConflict,
    InvalidArgument,
    InvalidCursor,
    Ledger,
    LedgerError,
    LedgerVersionError,
    PayloadRejected,
    RunNotFound,
    format_cursor,
    parse_cursor,
)
from zeroshot_kernel.ledger.events import MAX_ADMITTED_BYTES, RunEvent, RunStarted


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[Ledger]:
    with Ledger(ledger_url) as opened:
        yield opened


@pytest.fixture
def run_id(ledger: Ledger) -> str:
    return ledger.create_run(ADMITTED, title="primes")


def tail_after(ledger: Ledger, run_id: str, after: str | None) -> list[tuple[str, dict[str, Any]]]:
    _, events = ledger.snapshot_and_tail(run_id, after)
    return [(cursor, event.to_wire()) for cursor, event in events]


# -- creating runs ----------------------------------------------------------------------


def test_run_ids_are_short_url_safe_and_unique(ledger: Ledger) -> None:
    ids = {ledger.create_run(ADMITTED, title=f"run {n}") for n in range(20)}
    assert len(ids) == 20
    assert all(re.fullmatch(r"run-[a-z2-7]{12}", run_id) for run_id in ids)


def test_a_new_run_is_admitted_at_the_initial_cursor(ledger: Ledger, run_id: str) -> None:
    snapshot = ledger.snapshot(run_id)
    assert (snapshot.run_id, snapshot.title) == (run_id, "primes")
    assert (snapshot.phase, snapshot.cursor, snapshot.executions) == ("admitted", "v2:0", {})
    assert ledger.admitted(run_id) == ADMITTED
    assert ledger.run_exists(run_id) and not ledger.run_exists("run-missing00000")


def test_same_key_and_submission_returns_the_existing_run(ledger: Ledger) -> None:
    first = ledger.create_run(ADMITTED, title="primes", submission_key="key-1")
    reordered = dict(reversed(ADMITTED.items()))
    assert json.dumps(reordered) != json.dumps(ADMITTED)
    assert ledger.create_run(reordered, title="primes", submission_key="key-1") == first
    assert [summary.run_id for summary in ledger.runs()] == [first]


def test_same_key_with_a_different_submission_is_a_conflict(ledger: Ledger) -> None:
    first = ledger.create_run(ADMITTED, title="primes", submission_key="key-1")
    changed = {**ADMITTED, "initialInput": {"task": "something else"}}
    with pytest.raises(IdempotencyConflict) as caught:
        ledger.create_run(changed, title="primes", submission_key="key-1")
    assert caught.value.run_id == first
    assert isinstance(caught.value, LedgerError)
    assert ledger.create_run(changed, title="primes", submission_key="key-2") != first


def test_without_a_key_every_submission_is_a_new_run(ledger: Ledger) -> None:
    assert ledger.create_run(ADMITTED, title="a") != ledger.create_run(ADMITTED, title="a")


def test_idempotency_holds_across_reopening(ledger_url: str) -> None:
    with Ledger(ledger_url) as ledger:
        first = ledger.create_run(ADMITTED, title="primes", submission_key="key-1")
    with Ledger(ledger_url) as ledger:
        assert ledger.create_run(ADMITTED, title="primes", submission_key="key-1") == first


@pytest.mark.parametrize(
    ("admitted", "message"),
    [
        pytest.param({"blob": "x" * MAX_ADMITTED_BYTES}, "at most", id="too-large"),
        pytest.param({"score": float("nan")}, "not plain JSON", id="nan"),
        pytest.param({"when": object()}, "not plain JSON", id="not-json"),
        pytest.param([1, 2], "JSON object", id="not-an-object"),
    ],
)
def test_unstorable_submissions_are_rejected(ledger: Ledger, admitted: Any, message: str) -> None:
    with pytest.raises(PayloadRejected, match=message):
        ledger.create_run(admitted, title="t")
    assert ledger.runs() == []


@pytest.mark.parametrize("title", ["", "x" * 257])
def test_titles_are_bounded(ledger: Ledger, title: str) -> None:
    with pytest.raises(InvalidArgument, match="title"):
        ledger.create_run(ADMITTED, title=title)


def test_runs_lists_phase_cursor_times_and_result(ledger: Ledger) -> None:
    done = ledger.create_run(ADMITTED, title="done")
    waiting = ledger.create_run(ADMITTED, title="waiting")
    ledger.append(done, [RunStarted(), succeeded({"answer": 25})])
    summaries = {summary.run_id: summary for summary in ledger.runs()}
    assert summaries[done].phase == "finished" and summaries[done].cursor == "v2:2"
    terminal = summaries[done].terminal
    assert terminal is not None
    assert terminal.to_wire() == {"status": "succeeded", "output": {"answer": 25}}
    assert summaries[done].updated_at >= summaries[done].created_at
    assert summaries[waiting].phase == "admitted" and summaries[waiting].terminal is None
    assert [summary.run_id for summary in ledger.runs()] == [done, waiting]


# -- appending --------------------------------------------------------------------------


def test_append_returns_the_cursor_of_the_last_event(ledger: Ledger, run_id: str) -> None:
    assert ledger.append(run_id, [RunStarted()]) == "v2:1"
    assert ledger.append(run_id, [started(ref(run_id)), log("hi", "e1")]) == "v2:3"
    assert ledger.snapshot(run_id).cursor == "v2:3"


def test_a_batch_with_a_broken_rule_appends_nothing(ledger: Ledger, run_id: str) -> None:
    ledger.append(run_id, [RunStarted()])
    before = ledger.snapshot_and_tail(run_id)
    batch: list[RunEvent] = [started(ref(run_id, 1)), log("working", "e1"), started(ref(run_id, 1))]
    with pytest.raises(EventRejected) as caught:
        ledger.append(run_id, batch)
    assert (caught.value.position, caught.value.kind) == (2, "node_started")
    assert ledger.snapshot_and_tail(run_id) == before
    assert ledger.append(run_id, batch[:2]) == "v2:3"


def test_an_oversized_event_appends_nothing(ledger: Ledger, run_id: str) -> None:
    huge = started(ref(run_id)).model_copy(update={"input": {"blob": "x" * (1024 * 1024)}})
    with pytest.raises(PayloadRejected, match="node_started"):
        ledger.append(run_id, [RunStarted(), huge])
    assert ledger.snapshot(run_id).cursor == "v2:0"


def test_nothing_is_appended_after_terminal(ledger: Ledger, run_id: str) -> None:
    ledger.append(run_id, one_of_each_kind(run_id))
    late: list[RunEvent] = [attached(), log("late"), RunStarted()]
    for event in late:
        with pytest.raises(EventRejected, match="nothing may follow terminal"):
            ledger.append(run_id, [event])
    assert ledger.snapshot(run_id).cursor == "v2:9"


def test_an_empty_batch_is_refused(ledger: Ledger, run_id: str) -> None:
    with pytest.raises(InvalidArgument):
        ledger.append(run_id, [])


def test_every_event_kind_round_trips(ledger: Ledger, run_id: str) -> None:
    history = one_of_each_kind(run_id)
    ledger.append(run_id, history)
    _, events = ledger.snapshot_and_tail(run_id)
    assert [event for _, event in events] == history


def test_unknown_runs_are_not_found(ledger: Ledger) -> None:
    missing = "run-missing00000"
    calls: list[Callable[[], object]] = [
        lambda: ledger.append(missing, [RunStarted()]),
        lambda: ledger.snapshot(missing),
        lambda: ledger.snapshot_and_tail(missing),
        lambda: ledger.admitted(missing),
        lambda: ledger.request_force_stop(missing),
        lambda: ledger.acquire_lease(missing, "c", 5),
        lambda: ledger.lease(missing),
    ]
    for call in calls:
        with pytest.raises(RunNotFound, match=missing):
            call()


# -- force stop -------------------------------------------------------------------------


def test_force_stop_request_is_recorded_once(ledger: Ledger, run_id: str) -> None:
    ledger.append(run_id, [RunStarted(), started(ref(run_id))])
    assert ledger.request_force_stop(run_id) == "v2:3"
    assert ledger.request_force_stop(run_id) == "v2:3"
    assert ledger.snapshot(run_id).phase == "stopping"
    ledger.append(run_id, [crashed(ref(run_id)), failed("force_stopped")])
    assert ledger.request_force_stop(run_id) == "v2:5"
    _, events = ledger.snapshot_and_tail(run_id)
    assert [event.kind for _, event in events].count("force_stop_requested") == 1


# -- cursors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "garbage",
    ["", "v2:", "v2:-1", "v2:+1", "v2:01", "v3:1", "V2:1", "v2:1 ", "v2:1\n", " v2:1",
     "v2:\u0661", "v2:1.0", "v2:99999999999999999999", "cloud:3", 3, None],
)  # fmt: skip
def test_parse_cursor_rejects_anything_but_the_canonical_form(garbage: object) -> None:
    with pytest.raises(InvalidCursor):
        parse_cursor(garbage)


def test_cursor_format_round_trips() -> None:
    for sequence in (0, 1, 9, 10, 2**63 - 1):
        assert parse_cursor(format_cursor(sequence)) == sequence
    with pytest.raises(InvalidCursor):
        format_cursor(-1)


def test_a_malformed_or_foreign_cursor_is_refused(ledger: Ledger, run_id: str) -> None:
    ledger.append(run_id, [RunStarted(), attached()])
    with pytest.raises(InvalidCursor):
        ledger.snapshot_and_tail(run_id, "2")
    with pytest.raises(CursorAhead) as caught:
        ledger.snapshot_and_tail(run_id, "v2:3")
    assert (caught.value.cursor, caught.value.end) == ("v2:3", "v2:2")
    assert ledger.snapshot_and_tail(run_id, "v2:2")[1] == []


def test_resume_from_any_cursor_gives_exactly_the_later_events(ledger_url: str) -> None:
    with Ledger(ledger_url) as ledger:
        run_id = ledger.create_run(ADMITTED, title="primes")
        batches: list[list[RunEvent]] = [
            [RunStarted(), attached()],
            [started(ref(run_id, 1)), started(ref(run_id, 2))],
            [log(f"line {n}", "e1") for n in range(5)],
            [completed(ref(run_id, 1)), completed(ref(run_id, 2))],
            [succeeded()],
        ]
        ends = [ledger.append(run_id, batch) for batch in batches]
        assert ends == ["v2:2", "v2:4", "v2:9", "v2:11", "v2:12"]
        everything = tail_after(ledger, run_id, None)
    assert [cursor for cursor, _ in everything] == [f"v2:{n}" for n in range(1, 13)]
    with Ledger(ledger_url) as reopened:
        assert tail_after(reopened, run_id, None) == everything
        for position in range(13):
            after = f"v2:{position}"
            assert tail_after(reopened, run_id, after) == everything[position:]


def test_snapshot_and_tail_agree(ledger: Ledger, run_id: str) -> None:
    ledger.append(run_id, [RunStarted(), started(ref(run_id)), log("a", "e1"), log("b", "e1")])
    snapshot, events = ledger.snapshot_and_tail(run_id, "v2:1")
    assert snapshot == ledger.snapshot(run_id)
    assert events[-1][0] == snapshot.cursor == "v2:4"
    assert [cursor for cursor, _ in events] == ["v2:2", "v2:3", "v2:4"]


def test_tail_limit_and_kinds(ledger: Ledger, run_id: str) -> None:
    ledger.append(
        run_id, [RunStarted(), started(ref(run_id)), *[log(str(n), "e1") for n in range(6)]]
    )
    snapshot, first_page = ledger.snapshot_and_tail(run_id, limit=3)
    assert snapshot.cursor == "v2:8"
    assert [cursor for cursor, _ in first_page] == ["v2:1", "v2:2", "v2:3"]
    _, logs = ledger.snapshot_and_tail(run_id, "v2:4", kinds={"safe_log"}, limit=2)
    assert [(cursor, event.kind) for cursor, event in logs] == [
        ("v2:5", "safe_log"),
        ("v2:6", "safe_log"),
    ]
    assert ledger.snapshot_and_tail(run_id, kinds=set())[1] == []
    with pytest.raises(InvalidArgument, match="unknown event kinds: node_begin"):
        ledger.snapshot_and_tail(run_id, kinds={"node_begin"})
    with pytest.raises(InvalidArgument, match="limit"):
        ledger.snapshot_and_tail(run_id, limit=0)


# -- opening ----------------------------------------------------------------------------


def _set_schema_version(url: str, value: str) -> None:
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        connection.execute(
            sqlalchemy.text("UPDATE ledger_meta SET value = :value WHERE key = 'schema_version'"),
            {"value": value},
        )
    engine.dispose()


@pytest.mark.parametrize(
    ("stored", "message"),
    [(str(SCHEMA_VERSION + 1), "upgrade zeroshot"), ("banana", "cannot read")],
)
def test_a_ledger_from_an_unknown_schema_is_refused(
    ledger_url: str,
    stored: str,
    message: str,
) -> None:
    with Ledger(ledger_url) as ledger:
        run_id = ledger.create_run(ADMITTED, title="kept")
    _set_schema_version(ledger_url, stored)
    with pytest.raises(LedgerVersionError, match=message):
        Ledger(ledger_url)
    _set_schema_version(ledger_url, str(SCHEMA_VERSION))
    with Ledger(ledger_url) as ledger:
        assert ledger.snapshot(run_id).title == "kept"


def test_an_in_memory_ledger_serves_throwaway_use() -> None:
    with Ledger("sqlite://") as ledger:
        run_id = ledger.create_run(ADMITTED, title="scratch")
        assert ledger.append(run_id, [RunStarted(), succeeded()]) == "v2:2"
        assert ledger.snapshot(run_id).phase == "finished"


def test_the_workspace_ledger_lives_in_dot_zeroshot(tmp_path: Path) -> None:
    with Ledger.for_workspace(tmp_path) as ledger:
        run_id = ledger.create_run(ADMITTED, title="here")
    assert (tmp_path / ".zeroshot" / "ledger.db").is_file()
    with Ledger.for_workspace(tmp_path) as ledger:
        assert ledger.run_exists(run_id)
