"""SQLite settings are really in force on the ledger's connections: WAL, the busy timeout,
foreign keys; and a writer that meets a held write lock waits for it instead of failing
with "database is locked"."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ledger_events import ADMITTED, log

from zeroshot_kernel.ledger import Ledger, parse_cursor
from zeroshot_kernel.ledger.dialects import BUSY_TIMEOUT_MS
from zeroshot_kernel.ledger.events import RunStarted, SafeLog


def test_every_pooled_connection_has_wal_and_the_busy_timeout(tmp_path: Path) -> None:
    with Ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        # Two connections at once, so the second is a fresh one from the pool.
        first, second = ledger.engine.raw_connection(), ledger.engine.raw_connection()
        try:
            for connection in (first, second):
                cursor = connection.cursor()
                assert cursor.execute("PRAGMA journal_mode").fetchone() == ("wal",)
                assert cursor.execute("PRAGMA busy_timeout").fetchone() == (BUSY_TIMEOUT_MS,)
                assert cursor.execute("PRAGMA foreign_keys").fetchone() == (1,)
                cursor.close()
        finally:
            first.close()
            second.close()
    assert BUSY_TIMEOUT_MS >= 5_000


def test_a_writer_waits_for_a_held_write_lock_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger(f"sqlite:///{path}") as ledger:
        run_id = ledger.create_run(ADMITTED, title="contended")
        ledger.append(run_id, [RunStarted()])

        # Another writer (a plain sqlite3 connection, as another process would hold it)
        # takes the write lock and keeps it.
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        outcome: list[object] = []

        def append() -> None:
            try:
                outcome.append(ledger.append(run_id, [log("written after the wait")]))
            except Exception as failure:  # "database is locked" without a busy timeout
                outcome.append(failure)

        writer = threading.Thread(target=append)
        writer.start()
        # While the lock is held the append cannot complete; without a busy timeout it
        # would have failed at once, so it must still be waiting here.
        writer.join(timeout=0.5)
        assert writer.is_alive() and outcome == []
        holder.execute("COMMIT")
        holder.close()
        writer.join(timeout=30)

        assert not writer.is_alive()
        [cursor] = outcome
        assert isinstance(cursor, str) and parse_cursor(cursor) == 2
        lines = [
            event.line
            for _, event in ledger.snapshot_and_tail(run_id)[1]
            if isinstance(event, SafeLog)
        ]
        assert lines == ["written after the wait"]
