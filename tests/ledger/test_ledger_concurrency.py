"""Several processes on one ledger: writers never fail on locks, readers never see gaps.

Workers are fresh processes (``forkserver``) that open their own ``Ledger``, the way the
controller, the CLI and notebook kernels share a workspace ledger.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor

import pytest
from ledger_events import ADMITTED, completed, log, ref, started, succeeded

from zeroshot_kernel.ledger import Ledger, parse_cursor
from zeroshot_kernel.ledger.events import RunEvent, RunStarted

WRITERS = 4
READERS = 2
BATCHES = 40
EVENTS_PER_RUN = 1 + 3 * BATCHES + 1
DEADLINE_S = 60.0


def write_run(url: str, run_id: str) -> list[str]:
    """Start the run, complete BATCHES executions in small batches, finish it."""
    cursors = []
    with Ledger(url) as ledger:
        cursors.append(ledger.append(run_id, [RunStarted()]))
        for n in range(BATCHES):
            execution = ref(run_id, n)
            batch: list[RunEvent] = [
                started(execution),
                log(f"line {n}", execution.execution),
                completed(execution, n),
            ]
            cursors.append(ledger.append(run_id, batch))
        cursors.append(ledger.append(run_id, [succeeded(BATCHES)]))
    return cursors


def tail_runs(url: str, run_ids: list[str]) -> dict[str, list[int]]:
    """Follow every run until it finishes; return the sequences seen, in order."""
    seen: dict[str, list[int]] = {run_id: [] for run_id in run_ids}
    after: dict[str, str | None] = dict.fromkeys(run_ids)
    open_runs = set(run_ids)
    deadline = time.monotonic() + DEADLINE_S
    with Ledger(url) as ledger:
        while open_runs and time.monotonic() < deadline:
            for run_id in sorted(open_runs):
                snapshot, events = ledger.snapshot_and_tail(run_id, after[run_id])
                seen[run_id].extend(parse_cursor(cursor) for cursor, _ in events)
                if events:
                    assert events[-1][0] == snapshot.cursor, "tail must end at the snapshot"
                    after[run_id] = events[-1][0]
                if snapshot.phase == "finished":
                    open_runs.discard(run_id)
            time.sleep(0.005)
    return seen


def append_logs(url: str, run_id: str, writer: int, count: int) -> None:
    with Ledger(url) as ledger:
        for n in range(count):
            ledger.append(run_id, [log(f"writer {writer} line {n}")])


def create_with_key(url: str) -> str:
    with Ledger(url) as ledger:
        return ledger.create_run(ADMITTED, title="raced", submission_key="the-same-key")


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    """Six fresh worker processes forked from a server that imported the ledger once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with ProcessPoolExecutor(WRITERS + READERS, mp_context=context) as executor:
        yield executor


@pytest.mark.slow  # six processes on one ledger
def test_four_writers_and_two_tailing_readers_share_one_file(
    pool: ProcessPoolExecutor,
    ledger_url: str,
) -> None:
    with Ledger(ledger_url) as ledger:
        run_ids = [ledger.create_run(ADMITTED, title=f"run {n}") for n in range(WRITERS)]
    readers: list[Future[dict[str, list[int]]]] = [
        pool.submit(tail_runs, ledger_url, run_ids) for _ in range(READERS)
    ]
    writers = [pool.submit(write_run, ledger_url, run_id) for run_id in run_ids]
    written = [writer.result(timeout=DEADLINE_S) for writer in writers]
    observed = [reader.result(timeout=DEADLINE_S) for reader in readers]

    expected_ends = [1, *range(4, 3 * BATCHES + 2, 3), EVENTS_PER_RUN]
    for cursors in written:
        assert [parse_cursor(cursor) for cursor in cursors] == expected_ends
    every_sequence = list(range(1, EVENTS_PER_RUN + 1))
    for seen in observed:
        for run_id in run_ids:
            assert seen[run_id] == every_sequence, "a reader lost, repeated or reordered events"
    with Ledger(ledger_url) as ledger:
        for run_id in run_ids:
            snapshot, events = ledger.snapshot_and_tail(run_id)
            assert [parse_cursor(cursor) for cursor, _ in events] == every_sequence
            assert snapshot.phase == "finished" and len(snapshot.executions) == BATCHES


@pytest.mark.slow  # writer processes racing on one ledger
def test_writers_racing_on_one_run_are_serialised(
    pool: ProcessPoolExecutor,
    ledger_url: str,
) -> None:
    with Ledger(ledger_url) as ledger:
        run_id = ledger.create_run(ADMITTED, title="shared")
    jobs = [pool.submit(append_logs, ledger_url, run_id, writer, 40) for writer in range(3)]
    for job in jobs:
        job.result(timeout=DEADLINE_S)
    with Ledger(ledger_url) as ledger:
        _, events = ledger.snapshot_and_tail(run_id)
    assert [parse_cursor(cursor) for cursor, _ in events] == list(range(1, 121))
    lines = sorted(event.line for _, event in events if event.kind == "safe_log")
    assert lines == sorted(f"writer {w} line {n}" for w in range(3) for n in range(40))


def test_racing_creates_with_one_key_make_one_run(
    pool: ProcessPoolExecutor,
    ledger_url: str,
) -> None:
    Ledger(ledger_url).close()
    jobs = [pool.submit(create_with_key, ledger_url) for _ in range(4)]
    run_ids = {job.result(timeout=DEADLINE_S) for job in jobs}
    assert len(run_ids) == 1
    with Ledger(ledger_url) as ledger:
        assert [summary.run_id for summary in ledger.runs()] == list(run_ids)
