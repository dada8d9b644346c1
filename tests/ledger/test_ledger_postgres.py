"""What only a server database can get wrong: schema setup raced by many first opens, row
locks under a stricter default isolation, migrating and refusing schemas on PostgreSQL, and
text PostgreSQL cannot store. The rest of the ledger suite runs on PostgreSQL too (through
``ledger_url``); these are the cases it does not reach."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
import sqlalchemy
from ledger_events import (
    ADMITTED,
    completed,
    crashed,
    log,
    one_of_each_kind,
    ref,
    started,
    succeeded,
)
from sqlalchemy import text

from zeroshot_kernel.ledger import (
    SCHEMA_VERSION,
    InvalidArgument,
    Ledger,
    LedgerVersionError,
    admitted_snapshot,
    parse_cursor,
    replay,
)
from zeroshot_kernel.ledger.dialects import open_engines
from zeroshot_kernel.ledger.events import ForceStopRequested, RunEvent, RunStarted

# slow: a PostgreSQL server
pytestmark = pytest.mark.slow

T = TypeVar("T")
OPENERS = 6


def _all_at_once(count: int, work: Callable[[int], T]) -> list[T]:
    """Run ``work(0..count-1)`` on threads released together by a barrier."""
    barrier = threading.Barrier(count)

    def released(n: int) -> T:
        barrier.wait(timeout=30)
        return work(n)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(released, range(count)))


@pytest.fixture
def admin(postgres_url: str) -> Iterator[sqlalchemy.Engine]:
    """A plain engine on the test database, for what the ledger API does not do."""
    engine = sqlalchemy.create_engine(postgres_url)
    yield engine
    engine.dispose()


def _schema_version(engine: sqlalchemy.Engine) -> Any:
    with engine.connect() as connection:
        return connection.execute(
            text("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
        ).scalar_one()


# -- schema setup ------------------------------------------------------------------------


def test_many_first_opens_of_an_empty_database_create_the_schema_once(
    postgres_url: str,
    admin: sqlalchemy.Engine,
) -> None:
    # Without the advisory lock, concurrent CREATE TABLEs of one name collide in the
    # catalogue and all but one opener fail.
    def open_and_create(n: int) -> str:
        with Ledger(postgres_url) as ledger:
            return ledger.create_run(ADMITTED, title=f"opener {n}")

    run_ids = _all_at_once(OPENERS, open_and_create)
    assert len(set(run_ids)) == OPENERS
    assert _schema_version(admin) == str(SCHEMA_VERSION)
    with Ledger(postgres_url) as ledger:
        assert {summary.run_id for summary in ledger.runs()} == set(run_ids)


# -- isolation ---------------------------------------------------------------------------


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_racing_writers_queue_even_where_the_database_defaults_to_stricter_isolation(
    postgres_url: str,
    admin: sqlalchemy.Engine,
    isolation: str,
) -> None:
    # A run row locked FOR UPDATE and changed by another transaction is a serialization
    # failure above READ COMMITTED; the ledger asks for READ COMMITTED itself.
    database = sqlalchemy.engine.make_url(postgres_url).database
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(
            text(f"ALTER DATABASE \"{database}\" SET default_transaction_isolation = '{isolation}'")
        )
    with Ledger(postgres_url) as ledger:
        run_id = ledger.create_run(ADMITTED, title="contended")
        ledger.append(run_id, [RunStarted()])

    def append_lines(writer: int) -> None:
        with Ledger(postgres_url) as ledger:
            for n in range(15):
                ledger.append(run_id, [log(f"writer {writer} line {n}")])
                ledger.acquire_lease(run_id, f"writer {writer}", 0.001)

    _all_at_once(3, append_lines)
    with Ledger(postgres_url) as ledger:
        _, events = ledger.snapshot_and_tail(run_id)
    engines = open_engines(postgres_url)
    try:
        with engines.read.connect() as connection:
            level = connection.execute(text("SHOW transaction_isolation")).scalar_one()
    finally:
        engines.dispose()
    assert level == "read committed"
    assert [parse_cursor(cursor) for cursor, _ in events] == list(range(1, 47))


# -- schema versions ---------------------------------------------------------------------


def test_a_ledger_from_a_newer_schema_is_refused_before_anything_is_touched(
    ledger_url: str,
) -> None:
    with Ledger(ledger_url) as ledger:
        run_id = ledger.create_run(ADMITTED, title="kept")
    engine = sqlalchemy.create_engine(ledger_url)
    newer = str(SCHEMA_VERSION + 1)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE ledger_meta SET value = :v WHERE key = 'schema_version'"), {"v": newer}
        )
        connection.execute(text("DROP TABLE ledger_leases"))  # as if a newer schema had no such
    try:
        with pytest.raises(LedgerVersionError) as refused:
            Ledger(ledger_url)
        message = str(refused.value)
        assert f"schema version {newer}" in message
        assert f"up to {SCHEMA_VERSION}" in message and "upgrade zeroshot" in message
        assert _schema_version(engine) == newer
        assert "ledger_leases" not in sqlalchemy.inspect(engine).get_table_names()
        with engine.connect() as connection:
            titles = connection.execute(text("SELECT title FROM ledger_runs")).scalars().all()
        assert titles == ["kept"]
    finally:
        engine.dispose()
    assert run_id


V1_SCHEMA = [
    'CREATE TABLE ledger_meta ("key" VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL)',
    "CREATE TABLE ledger_runs (run_id VARCHAR(64) PRIMARY KEY, "
    "submission_key VARCHAR(256) UNIQUE, submission_digest VARCHAR(64) NOT NULL, "
    "title VARCHAR(256) NOT NULL, phase VARCHAR(16) NOT NULL, sequence BIGINT NOT NULL, "
    "terminal_json TEXT, snapshot_json TEXT NOT NULL, created_at FLOAT NOT NULL, "
    "updated_at FLOAT NOT NULL)",
    "CREATE INDEX ix_ledger_runs_created_at ON ledger_runs (created_at)",
    "CREATE TABLE ledger_admitted (run_id VARCHAR(64) PRIMARY KEY "
    "REFERENCES ledger_runs (run_id), document TEXT NOT NULL)",
    "CREATE TABLE ledger_events (run_id VARCHAR(64) NOT NULL REFERENCES ledger_runs (run_id), "
    "sequence BIGINT NOT NULL, kind VARCHAR(32) NOT NULL, event_json TEXT NOT NULL, "
    "PRIMARY KEY (run_id, sequence))",
    "CREATE TABLE ledger_leases (run_id VARCHAR(64) PRIMARY KEY "
    "REFERENCES ledger_runs (run_id), owner VARCHAR(256) NOT NULL, "
    "expires_at FLOAT NOT NULL, heartbeat_at FLOAT NOT NULL)",
    "INSERT INTO ledger_meta VALUES ('schema_version', '1')",
]


def test_a_version_1_ledger_on_postgresql_is_migrated_in_place(
    postgres_url: str,
    admin: sqlalchemy.Engine,
) -> None:
    finished, stopping = "run-finished0000", "run-stopping0000"
    runs: dict[str, list[RunEvent]] = {
        finished: one_of_each_kind(finished),
        stopping: [
            RunStarted(),
            started(ref(stopping, 1)),
            started(ref(stopping, 2)),
            completed(ref(stopping, 2)),
            ForceStopRequested(),
        ],
    }
    with admin.begin() as connection:
        for statement in V1_SCHEMA:
            connection.execute(text(statement))
        for run_id, history in runs.items():
            snapshot = replay(admitted_snapshot(run_id, run_id), history)
            terminal = None if snapshot.terminal is None else snapshot.terminal.model_dump_json()
            connection.execute(
                text(
                    "INSERT INTO ledger_runs VALUES (:run, NULL, 'digest', :run, :phase, "
                    ":sequence, :terminal, :document, 1.0, 2.0)"
                ),
                {
                    "run": run_id,
                    "phase": snapshot.phase,
                    "sequence": len(history),
                    "terminal": terminal,
                    "document": snapshot.model_dump_json(),
                },
            )
            connection.execute(
                text("INSERT INTO ledger_admitted VALUES (:run, '{}')"), {"run": run_id}
            )
            connection.execute(
                text("INSERT INTO ledger_events VALUES (:run, :sequence, :kind, :document)"),
                [
                    {
                        "run": run_id,
                        "sequence": n + 1,
                        "kind": e.kind,
                        "document": e.model_dump_json(),
                    }
                    for n, e in enumerate(history)
                ],
            )

    with Ledger(postgres_url) as ledger:
        for run_id, history in runs.items():
            assert ledger.snapshot(run_id) == replay(admitted_snapshot(run_id, run_id), history)
            assert [e for _, e in ledger.snapshot_and_tail(run_id)[1]] == history
        ledger.append(stopping, [crashed(ref(stopping, 1)), succeeded()])
        assert ledger.snapshot(stopping).phase == "finished"
    assert _schema_version(admin) == str(SCHEMA_VERSION)
    columns = {c["name"] for c in sqlalchemy.inspect(admin).get_columns("ledger_runs")}
    assert "snapshot_json" not in columns and "force_stop_requested" in columns


# -- text PostgreSQL cannot hold ---------------------------------------------------------


@pytest.mark.parametrize("bad", ["nul\x00inside", "lone \ud800 surrogate"])
def test_text_no_database_can_store_is_refused_alike_everywhere(
    ledger_url: str,
    bad: str,
) -> None:
    # PostgreSQL text cannot hold NUL; neither database can hold a lone surrogate.
    with Ledger(ledger_url) as ledger:
        with pytest.raises(InvalidArgument, match="title"):
            ledger.create_run(ADMITTED, title=bad)
        with pytest.raises(InvalidArgument, match="submission_key"):
            ledger.create_run(ADMITTED, title="t", submission_key=bad)
        run_id = ledger.create_run(ADMITTED, title="fine")
        with pytest.raises(InvalidArgument, match="owner"):
            ledger.acquire_lease(run_id, bad, 5)
        assert [summary.title for summary in ledger.runs()] == ["fine"]
