"""Observing runs through the ledger: concurrent runs and tailing readers on one SQLite
file, and strict cursor resumption across reconnects while a run is live."""

from __future__ import annotations

import asyncio
import threading
import time

import engine_graphs as g
import pytest
from engine_support import Workspace, assert_single_terminal_last, finish, wire

from zeroshot_kernel.client import Client, Run
from zeroshot_kernel.ledger import CursorAhead, InvalidCursor
from zeroshot_kernel.ledger.events import RunEvent

# slow: detached controllers and tailing readers
pytestmark = pytest.mark.slow

RESUME_INPUT = {"value": 0, "items": [{"n": 1}, {"n": 2}, {"n": 3}]}
RESUME_RESULT = {"status": "succeeded", "output": {"value": 3, "results": [1, 4, 9]}}
Tail = list[tuple[str, RunEvent]]


def follow(client: Client, run_id: str, into: Tail, errors: list[BaseException]) -> None:
    try:
        into.extend(client.run(run_id).events(follow=True, poll_s=0.01))
    except BaseException as error:
        errors.append(error)


def follow_async(client: Client, run_id: str, into: Tail, errors: list[BaseException]) -> None:
    async def tail() -> None:
        async for item in client.run(run_id).aevents(poll_s=0.01):
            into.append(item)

    try:
        asyncio.run(tail())
    except BaseException as error:
        errors.append(error)


def test_four_runs_and_two_tailing_readers_share_one_ledger(ws: Workspace) -> None:
    ws.behave(prep={"sleep": 0.1}, square={"sleep": 0.1})
    runs = [ws.submit(g.resume_graph(), RESUME_INPUT) for _ in range(4)]
    # Two readers, each its own client (connections), following every run: one with
    # events(follow=True) on threads, one with aevents on event loops.
    readers = [ws.new_client(), ws.new_client()]
    tails: list[list[Tail]] = [[[] for _ in runs] for _ in readers]
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=target, args=(reader, run.id, tail, errors), daemon=True)
        for target, reader, reader_tails in zip((follow, follow_async), readers, tails, strict=True)
        for run, tail in zip(runs, reader_tails, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads), "a reader never saw the end"
    for index, run in enumerate(runs):
        assert wire(finish(run)) == RESUME_RESULT
        assert_single_terminal_last(run)
        recorded = [(cursor, event.to_wire()) for cursor, event in run.events()]
        assert [cursor for cursor, _ in recorded] == [
            f"v2:{n}" for n in range(1, len(recorded) + 1)
        ]
        for reader_tails in tails:
            # Neither lost nor duplicated: exactly the recorded events, in order.
            assert [(c, e.to_wire()) for c, e in reader_tails[index]] == recorded
    for run in runs:
        log = (ws.root / ".zeroshot" / "controllers" / f"{run.id}.log").read_text()
        assert "locked" not in log and "Traceback" not in log, log


def test_events_after_a_cursor_are_exactly_those_after_it_across_reconnects(
    ws: Workspace,
) -> None:
    ws.behave(bump={"sleep": 0.15}, gate={"sleep": 0.1})
    run = ws.submit(g.loop_graph(), {"value": -1})
    # A reader that reconnects (a new Client) for every read, always from the last cursor
    # it saw, while the run is live.
    cursor: str | None = None
    pieces: list[Tail] = []
    asked: list[tuple[str | None, Tail]] = []
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, f"run {run.id} did not finish"
        reader = ws.new_client()
        piece = list(Run(reader, run.id).events(cursor))
        asked.append((cursor, piece))
        pieces.append(piece)
        reader.close()
        if piece:
            cursor = piece[-1][0]
            if piece[-1][1].kind == "terminal":
                break
        time.sleep(0.05)
    assert len(pieces) > 3, "the reads happened while the run was live"
    joined = [(c, e.to_wire()) for piece in pieces for c, e in piece]
    everything = [(c, e.to_wire()) for c, e in ws.new_client().run(run.id).events()]
    assert joined == everything
    # Every read from cursor c returned exactly the events after c (a prefix of them, as
    # far as the run had got).
    for after, piece in asked:
        start = 0 if after is None else int(after[3:])
        assert [(c, e.to_wire()) for c, e in piece] == everything[start : start + len(piece)]
    # Cursors name positions exactly: beyond the end or malformed is an error, not a guess.
    last = int(everything[-1][0][3:])
    assert list(run.events(f"v2:{last}")) == []
    with pytest.raises(CursorAhead):
        list(run.events(f"v2:{last + 1}"))
    with pytest.raises(InvalidCursor):
        list(run.events("v2:01"))
