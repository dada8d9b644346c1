"""Snapshots read however the ledger reads them (kept, brought forward, read afresh) equal
the replay of the run's events; appends checked without the snapshot at hand obey the
same rules; a version-1 ledger is migrated on opening."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from ledger_events import (
    ADMITTED,
    attached,
    completed,
    crashed,
    log,
    one_of_each_kind,
    ref,
    started,
    succeeded,
)

from zeroshot_kernel.ledger import (
    SCHEMA_VERSION,
    EventRejected,
    Ledger,
    RunSnapshot,
    admitted_snapshot,
    replay,
)
from zeroshot_kernel.ledger.events import ForceStopRequested, RunEvent, RunStarted

Ledgers = tuple[Ledger, Ledger, str]


@pytest.fixture
def ledgers(ledger_url: str) -> Iterator[Ledgers]:
    """Two ledger objects on one database (two processes, as far as caching goes), and
    its URL for more."""
    with Ledger(ledger_url) as writer, Ledger(ledger_url) as reader:
        yield writer, reader, ledger_url


def replayed(ledger: Ledger, run_id: str) -> RunSnapshot:
    snapshot, events = ledger.snapshot_and_tail(run_id)
    return replay(admitted_snapshot(run_id, snapshot.title), [event for _, event in events])


def test_every_way_of_reading_agrees_with_replay(ledgers: Ledgers) -> None:
    writer, reader, url = ledgers
    run_id = writer.create_run(ADMITTED, title="agree")
    history = one_of_each_kind(run_id)
    for end in range(1, len(history) + 1):
        writer.append(run_id, history[end - 1 : end])
        expected = replayed(writer, run_id)
        assert writer.snapshot(run_id) == expected  # kept by the writer
        assert reader.snapshot(run_id) == expected  # brought forward from the last read
        with Ledger(url) as cold:
            assert cold.snapshot(run_id) == expected  # read afresh
        assert list(expected.executions) == list(reader.snapshot(run_id).executions)


def test_appends_by_a_ledger_that_never_read_the_run_obey_the_rules(ledgers: Ledgers) -> None:
    writer, other, url = ledgers
    run_id = writer.create_run(ADMITTED, title="rules")
    writer.append(run_id, [RunStarted(), started(ref(run_id, 1)), started(ref(run_id, 2))])
    with Ledger(url) as cold, pytest.raises(EventRejected, match="no execution is active"):
        cold.append(run_id, [completed(ref(run_id, 1)), succeeded()])
    with Ledger(url) as cold, pytest.raises(EventRejected, match="never dispatched"):
        cold.append(run_id, [log("who?", "e9")])
    with Ledger(url) as cold, pytest.raises(EventRejected, match="already dispatched"):
        cold.append(run_id, [started(ref(run_id, 2))])
    other.append(run_id, [crashed(ref(run_id, 2)), log("late", "e2")])
    writer.append(run_id, [completed(ref(run_id, 1))])
    with pytest.raises(EventRejected, match="already completed"):
        other.append(run_id, [completed(ref(run_id, 1))])
    with Ledger(url) as cold:
        cold.append(run_id, [attached(), succeeded()])
    assert writer.snapshot(run_id) == replayed(other, run_id)
    assert writer.snapshot(run_id).phase == "finished"


def test_a_force_stop_from_elsewhere_reaches_a_reader_that_kept_the_run(ledgers: Ledgers) -> None:
    writer, reader, _ = ledgers
    run_id = writer.create_run(ADMITTED, title="stop")
    writer.append(run_id, [RunStarted()])
    assert not reader.snapshot(run_id).force_stop_requested
    writer.request_force_stop(run_id)
    assert reader.snapshot(run_id).force_stop_requested
    assert reader.snapshot(run_id).phase == "stopping"


def test_a_rejected_batch_leaves_the_kept_snapshot_as_it_was(ledgers: Ledgers) -> None:
    writer, _, _ = ledgers
    run_id = writer.create_run(ADMITTED, title="atomic")
    writer.append(run_id, [RunStarted(), started(ref(run_id, 1))])
    before = writer.snapshot(run_id)
    batch: list[RunEvent] = [completed(ref(run_id, 1)), started(ref(run_id, 1))]
    with pytest.raises(EventRejected):
        writer.append(run_id, batch)
    assert writer.snapshot(run_id) == before == replayed(writer, run_id)


# -- migrating a version-1 ledger --------------------------------------------------------

V1_SCHEMA = """
CREATE TABLE ledger_meta ("key" VARCHAR(64) NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
CREATE TABLE ledger_runs (run_id VARCHAR(64) NOT NULL, submission_key VARCHAR(256),
    submission_digest VARCHAR(64) NOT NULL, title VARCHAR(256) NOT NULL,
    phase VARCHAR(16) NOT NULL, sequence BIGINT NOT NULL, terminal_json TEXT,
    snapshot_json TEXT NOT NULL, created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL,
    PRIMARY KEY (run_id), UNIQUE (submission_key));
CREATE INDEX ix_ledger_runs_created_at ON ledger_runs (created_at);
CREATE TABLE ledger_admitted (run_id VARCHAR(64) NOT NULL, document TEXT NOT NULL,
    PRIMARY KEY (run_id), FOREIGN KEY(run_id) REFERENCES ledger_runs (run_id));
CREATE TABLE ledger_events (run_id VARCHAR(64) NOT NULL, sequence BIGINT NOT NULL,
    kind VARCHAR(32) NOT NULL, event_json TEXT NOT NULL, PRIMARY KEY (run_id, sequence),
    FOREIGN KEY(run_id) REFERENCES ledger_runs (run_id)) WITHOUT ROWID;
CREATE TABLE ledger_leases (run_id VARCHAR(64) NOT NULL, owner VARCHAR(256) NOT NULL,
    expires_at FLOAT NOT NULL, heartbeat_at FLOAT NOT NULL, PRIMARY KEY (run_id),
    FOREIGN KEY(run_id) REFERENCES ledger_runs (run_id));
INSERT INTO ledger_meta VALUES ('schema_version', '1');
"""


def _v1_ledger(path: Path, runs: dict[str, list[RunEvent]]) -> None:
    """A database as version 1 wrote it: each run's snapshot as one document."""
    connection = sqlite3.connect(path)
    connection.executescript(V1_SCHEMA)
    for run_id, history in runs.items():
        snapshot = replay(admitted_snapshot(run_id, run_id), history)
        terminal = None if snapshot.terminal is None else snapshot.terminal.model_dump_json()
        connection.execute(
            "INSERT INTO ledger_runs VALUES (?, NULL, 'digest', ?, ?, ?, ?, ?, 1.0, 2.0)",
            (run_id, run_id, snapshot.phase, len(history), terminal, snapshot.model_dump_json()),
        )
        connection.execute("INSERT INTO ledger_admitted VALUES (?, '{}')", (run_id,))
        connection.executemany(
            "INSERT INTO ledger_events VALUES (?, ?, ?, ?)",
            [(run_id, n + 1, e.kind, e.model_dump_json()) for n, e in enumerate(history)],
        )
    connection.commit()
    connection.close()


def test_a_version_1_ledger_is_migrated_and_keeps_every_run(tmp_path: Path) -> None:
    finished, stopping, fresh = "run-finished0000", "run-stopping0000", "run-admitted0000"
    runs: dict[str, list[RunEvent]] = {
        finished: one_of_each_kind(finished),
        stopping: [
            RunStarted(),
            started(ref(stopping, 1)),
            started(ref(stopping, 2)),
            completed(ref(stopping, 2)),
            ForceStopRequested(),
        ],
        fresh: [],
    }
    path = tmp_path / "ledger.db"
    _v1_ledger(path, runs)
    url = f"sqlite:///{path}"
    with Ledger(url) as ledger:
        for run_id, history in runs.items():
            expected = replay(admitted_snapshot(run_id, run_id), history)
            assert ledger.snapshot(run_id) == expected
            assert [e for _, e in ledger.snapshot_and_tail(run_id)[1]] == history
        ledger.append(stopping, [crashed(ref(stopping, 1)), succeeded()])
        assert ledger.snapshot(stopping).phase == "finished"
    with Ledger(url) as reopened:
        assert {s.run_id for s in reopened.runs()} == set(runs)
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT value FROM ledger_meta").fetchone() == (str(SCHEMA_VERSION),)
    columns = {row[1] for row in connection.execute("PRAGMA table_info(ledger_runs)")}
    assert "snapshot_json" not in columns
    connection.close()
