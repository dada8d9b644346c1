"""The durable run ledger: runs, their append-only events, snapshots, cursors and leases.

Every write is one short transaction that locks the run first (``BEGIN IMMEDIATE`` on
SQLite, ``SELECT ... FOR UPDATE`` on PostgreSQL), checks the whole batch against the
event rules, then writes the events and what they changed (the run row, the execution
rows) together: an append costs its batch, never the run's length. Reads take the run
row and everything up to its sequence, so a tail never runs ahead of the snapshot it is
returned with, whatever the database's isolation level; a snapshot already known at an
older sequence is brought forward with the newer events only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pydantic import TypeAdapter
from sqlalchemy import URL, Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from zeroshot_kernel.contract.canonical import dump_canonical
from zeroshot_kernel.ledger import leases
from zeroshot_kernel.ledger.cursor import format_cursor, parse_cursor
from zeroshot_kernel.ledger.dialects import ledger_failure, open_engines, sqlite_file
from zeroshot_kernel.ledger.errors import (
    CursorAhead,
    IdempotencyConflict,
    InvalidArgument,
    LeaseNotHeld,
    LedgerUnavailable,
    PayloadRejected,
    RunNotFound,
)
from zeroshot_kernel.ledger.events import (
    MAX_ADMITTED_BYTES,
    MAX_EVENT_BYTES,
    MAX_INPUT_BYTES,
    ForceStopRequested,
    RunEvent,
    TerminalResult,
    stored_json,
)
from zeroshot_kernel.ledger.projection import (
    Header,
    Statements,
    partial_snapshot,
    read_header,
    read_snapshot,
    referenced,
)
from zeroshot_kernel.ledger.schema import ensure_schema, schema_state
from zeroshot_kernel.ledger.snapshot_cache import SnapshotCache
from zeroshot_kernel.ledger.state import (
    EVENT_KINDS,
    Active,
    RunSnapshot,
    admitted_snapshot,
    fold_batch,
)
from zeroshot_kernel.ledger.statements import Cursor, Row, raw_transaction
from zeroshot_kernel.ledger.summaries import Lease, RunSummary, utc
from zeroshot_kernel.ledger.tables import AdmittedRow, LeaseRow, RunRow

WORKSPACE_LEDGER = Path(".zeroshot") / "ledger.db"
MAX_TITLE_CHARS = 256
MAX_KEY_CHARS = 256

_EVENT = TypeAdapter[RunEvent](RunEvent)
_TERMINAL = TypeAdapter[TerminalResult](TerminalResult)


class Ledger:
    """One ledger database, shared safely by any number of threads and processes."""

    def __init__(self, url: str | URL, *, clock: Callable[[], float] = time.time) -> None:
        """Open the ledger at a SQLAlchemy ``url``. Nothing is created until the first
        write (:meth:`create_run`): until then reads find no runs and take no write lock.

        ``clock`` returns UNIX seconds; every timestamp and lease expiry comes from it, so
        machines sharing a database agree as far as their clocks do.
        """
        self._engines = open_engines(url)
        self._clock = clock
        self._cache = SnapshotCache()
        self._file = sqlite_file(self._engines.read.url)
        self._ready = False
        self._statements = Statements(self._engines.read)
        try:
            # An existing database is checked now (damaged, unreachable, a newer schema:
            # refused at once; an older one migrated); a missing one stays missing.
            self._exists()
        except BaseException:
            self._engines.dispose()
            raise

    @classmethod
    def for_workspace(
        cls, workspace: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> Self:
        """The workspace's own ledger, a SQLite file at ``<workspace>/.zeroshot/ledger.db``."""
        path = Path(workspace).resolve() / WORKSPACE_LEDGER
        return cls(URL.create("sqlite", database=str(path)), clock=clock)

    @property
    def file(self) -> Path | None:
        """The SQLite file of this ledger (``None`` for other databases): what no box
        may see."""
        return self._file

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine behind this ledger; its connections carry the database's
        concurrency settings. For inspection: write runs through the ledger's methods."""
        return self._engines.read

    def close(self) -> None:
        """Release the connections; the ledger must not be used afterwards."""
        self._engines.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- runs ---------------------------------------------------------------------------

    def create_run(
        self, admitted: dict[str, Any], *, title: str, submission_key: str | None = None
    ) -> str:
        """Record an admitted submission as a new run and return its id.

        With a ``submission_key``, repeating the same submission returns the run it created;
        reusing the key for a different submission raises :class:`IdempotencyConflict`.
        ``admitted`` must hold no secret values: it is stored as given.
        """
        _check_text("title", title, MAX_TITLE_CHARS)
        if submission_key is not None:
            _check_text("submission_key", submission_key, MAX_KEY_CHARS)
        if not isinstance(admitted, dict):
            raise PayloadRejected("the admitted submission must be a JSON object")
        document = _json_text(admitted, "the admitted submission", MAX_ADMITTED_BYTES)
        _json_text(
            admitted.get("initialInput"),
            f"the initial input (recorded in events of at most {MAX_EVENT_BYTES:,} bytes)",
            MAX_INPUT_BYTES,
        )
        digest = hashlib.sha256(dump_canonical(admitted, allow_floats=True)).hexdigest()
        self._create_schema()
        try:
            return self._create_once(document, digest, title, submission_key)
        except IntegrityError:
            # Another process committed the same key (or, vanishingly, the same id) first;
            # the retry sees its row.
            try:
                return self._create_once(document, digest, title, submission_key)
            except IntegrityError as again:
                raise ledger_failure(self._engines.read.url, again.orig or again) from None

    def _create_once(
        self, document: str, digest: str, title: str, submission_key: str | None
    ) -> str:
        with self._writing() as session:
            if submission_key is not None:
                existing = session.exec(
                    select(RunRow.run_id, RunRow.submission_digest).where(
                        RunRow.submission_key == submission_key
                    )
                ).first()
                if existing is not None:
                    run_id, existing_digest = existing
                    if existing_digest != digest:
                        raise IdempotencyConflict(run_id)
                    return run_id
            run_id = _new_run_id()
            now = self._clock()
            snapshot = admitted_snapshot(run_id, title)
            session.add(
                RunRow(
                    run_id=run_id,
                    submission_key=submission_key,
                    submission_digest=digest,
                    title=title,
                    phase=snapshot.phase,
                    sequence=0,
                    force_stop_requested=False,
                    created_at=now,
                    updated_at=now,
                )
            )
            session.flush()  # the run row first: the admitted row references it
            session.add(AdmittedRow(run_id=run_id, document=document))
        return run_id

    def run_exists(self, run_id: str) -> bool:
        if not self._exists():
            return False
        with self._reading() as session:
            return _run_id(session, run_id) is not None

    def admitted(self, run_id: str) -> dict[str, Any]:
        """The admitted submission, exactly as it was recorded."""
        self._require(run_id)
        with self._reading() as session:
            stored = session.get(AdmittedRow, run_id)
        if stored is None:
            raise RunNotFound(run_id)
        admitted: dict[str, Any] = json.loads(stored.document)
        return admitted

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first, without reading snapshots or events."""
        if not self._exists():
            return []
        query = select(RunRow).order_by(col(RunRow.created_at), col(RunRow.run_id))
        with self._reading() as session:
            rows = session.exec(query).all()
        return [_summary(row) for row in rows]

    # -- events -------------------------------------------------------------------------

    def append(self, run_id: str, events: Sequence[RunEvent], *, owner: str | None = None) -> str:
        """Append a batch atomically and return the run's new cursor.

        Events are checked in order against the run's rules; if any is rejected
        (:class:`EventRejected`) or too large (:class:`PayloadRejected`), none is written.
        With ``owner`` (a controller's id) the batch is written only while ``owner`` holds
        a live lease, checked under the run's lock in the same transaction
        (:class:`LeaseNotHeld` otherwise): a controller paused past its lease cannot write
        once another took over.
        """
        if not events:
            raise InvalidArgument("a batch must hold at least one event")
        documents = _documents(events)
        self._require(run_id)
        with self._raw(write=True) as cursor:
            header = self._header(cursor, run_id, lock=True)
            if owner is not None:
                holder = cursor.first(self._statements.lease_holder, run_id=run_id)
                if holder is None or holder[0] != owner or holder[1] <= self._clock():
                    raise LeaseNotHeld(run_id, owner)
            snapshot = self._append_locked(cursor, header, events, documents)
        return self._keep(snapshot)

    def request_force_stop(self, run_id: str) -> str:
        """Record the intent to force-stop once; repeating it, or asking after the run
        finished, changes nothing. Returns the run's cursor."""
        events = [ForceStopRequested()]
        documents = _documents(events)
        self._require(run_id)
        with self._raw(write=True) as cursor:
            header = self._header(cursor, run_id, lock=True)
            if header.force_stop_requested or header.terminal_json is not None:
                return format_cursor(header.sequence)
            snapshot = self._append_locked(cursor, header, events, documents)
        return self._keep(snapshot)

    def snapshot(self, run_id: str) -> RunSnapshot:
        """The run's current projection (its ``cursor`` is the last event's).

        Snapshots are immutable and may be shared between callers."""
        self._require(run_id)
        with self._raw(write=False) as cursor:
            snapshot = self._snapshot(cursor, self._header(cursor, run_id, lock=False))
        self._cache.put(snapshot)
        return snapshot

    def snapshot_and_tail(
        self,
        run_id: str,
        after: str | None = None,
        *,
        limit: int | None = None,
        kinds: set[str] | None = None,
    ) -> tuple[RunSnapshot, list[tuple[str, RunEvent]]]:
        """The current snapshot and the events after cursor ``after``, read together.

        Without ``limit`` the events run exactly up to ``snapshot.cursor``; with it they
        stop early and the caller resumes from the last cursor returned. ``kinds`` keeps
        only those event kinds (cursors still name each event's true position).
        """
        start = 0 if after is None else parse_cursor(after)
        if limit is not None and limit < 1:
            raise InvalidArgument(f"limit must be at least 1, not {limit}")
        if kinds is not None and not kinds <= EVENT_KINDS:
            raise InvalidArgument(f"unknown event kinds: {', '.join(sorted(kinds - EVENT_KINDS))}")
        self._require(run_id)
        with self._raw(write=False) as cursor:
            header = self._header(cursor, run_id, lock=False)
            if start > header.sequence:
                raise CursorAhead(format_cursor(start), format_cursor(header.sequence))
            snapshot = self._snapshot(cursor, header)
            tail: list[Row] = []
            if kinds != set():
                statement = self._statements.tail(kinds, limited=limit is not None)
                bounds: dict[str, object] = {
                    "run_id": run_id,
                    "after": start,
                    "sequence": header.sequence,
                }
                if limit is not None:
                    bounds["limit"] = limit
                tail = cursor.rows(statement, **bounds)
        self._cache.put(snapshot)
        return snapshot, [
            (format_cursor(sequence), _EVENT.validate_json(document)) for sequence, document in tail
        ]

    # -- leases -------------------------------------------------------------------------

    def acquire_lease(
        self, run_id: str, owner: str, ttl_s: float, *, replacing: str | None = None
    ) -> bool:
        """Become the run's controller for ``ttl_s`` seconds, unless another live one is;
        ``replacing`` names a holder known to be dead, whose live lease is taken over."""
        _check_lease_args(owner, ttl_s)
        self._require(run_id)
        with self._writing() as session:
            _lock_run(session, run_id)
            return leases.acquire(session, run_id, owner, self._clock(), ttl_s, replacing=replacing)

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Heartbeat: extend ``owner``'s live lease; False means it was lost."""
        _check_lease_args(owner, ttl_s)
        self._require(run_id)
        with self._writing() as session:
            _lock_run(session, run_id)
            return leases.renew(session, run_id, owner, self._clock(), ttl_s)

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a controller that finished or is shutting down cleanly)."""
        self._require(run_id)
        with self._writing() as session:
            _lock_run(session, run_id)
            leases.release(session, run_id, owner)

    def lease(self, run_id: str) -> Lease | None:
        """The run's lease as last written (possibly lapsed), or None if nobody holds it."""
        self._require(run_id)
        with self._reading() as session:
            if _run_id(session, run_id) is None:
                raise RunNotFound(run_id)
            row = session.get(LeaseRow, run_id)
        if row is None:
            return None
        return Lease(
            owner=row.owner, expires_at=utc(row.expires_at), heartbeat_at=utc(row.heartbeat_at)
        )

    # -- plumbing -----------------------------------------------------------------------

    @staticmethod
    def _file_exists(file: Path) -> bool:
        """Whether the SQLite file exists; a name the system refuses (too long, a loop of
        links) leaves the ledger unusable, said in one line."""
        try:
            return file.exists()
        except OSError as problem:
            raise LedgerUnavailable(
                str(file),
                "unreachable",
                f"the database file cannot be used ({problem.strerror or problem})",
            ) from None

    def _exists(self) -> bool:
        """Whether the database holds a ledger, checked without writing (a SQLite file
        that does not exist is not even opened); one of an older schema is migrated
        first, as every read of it needs the current tables."""
        if self._ready:
            return True
        if self._file is not None and not self._file_exists(self._file):
            return False
        with self._reading() as session:
            state = schema_state(session)
        if state == "absent":
            return False
        if state == "outdated":
            self._create_schema()
        self._ready = True
        return True

    def _require(self, run_id: str) -> None:
        """Before reading or changing a run: no ledger yet means no such run."""
        if not self._exists():
            raise RunNotFound(run_id)

    def prepare(self) -> None:
        """Create the tables (or migrate older ones) now rather than at the first write, so
        that a location that cannot hold a ledger is found when it is named."""
        self._create_schema()

    def _create_schema(self) -> None:
        """Before the first write: create the tables (or migrate older ones)."""
        if self._ready:
            return
        with self._writing() as session:
            ensure_schema(session)
        self._ready = True

    def _header(self, cursor: Cursor, run_id: str, *, lock: bool) -> Header:
        header = read_header(cursor, self._statements, run_id, lock=lock)
        if header is None:
            raise RunNotFound(run_id)
        return header

    def _snapshot(self, cursor: Cursor, header: Header) -> RunSnapshot:
        cached = self._cache.get(header.run_id)
        return read_snapshot(cursor, self._statements, header, cached and cached[1])

    def _append_locked(
        self,
        cursor: Cursor,
        header: Header,
        events: Sequence[RunEvent],
        documents: list[str],
    ) -> tuple[RunSnapshot, bool]:
        """Check the batch against the locked run, then write its events and what they
        changed. Returns the new snapshot and whether it is complete: the rules need only
        the executions the batch names and the active ones, so when the run's current
        snapshot is not at hand only those are read."""
        cached = self._cache.get(header.run_id)
        complete = cached is not None and cached[0] == header.sequence
        if cached is not None and complete:
            before = cached[1]
        else:
            before = partial_snapshot(cursor, self._statements, header, referenced(events))
        fold = fold_batch(before, events)
        first = header.sequence + 1
        last = header.sequence + len(events)
        statements = self._statements
        run_id = header.run_id
        cursor.run_many(
            statements.insert_event,
            [
                {
                    "run_id": run_id,
                    "sequence": first + offset,
                    "kind": event.kind,
                    "event_json": document,
                }
                for offset, (event, document) in enumerate(zip(events, documents, strict=True))
            ],
        )
        for execution, entry in fold.changed.items():
            settled = None if isinstance(entry.state, Active) else parse_cursor(entry.state.at)
            if execution in before.executions:
                cursor.run(
                    statements.settle_execution,
                    run_id=run_id,
                    execution=execution,
                    settled=settled,
                )
            else:
                cursor.run(
                    statements.insert_execution,
                    run_id=run_id,
                    execution=execution,
                    started=parse_cursor(entry.started_at),
                    settled=settled,
                )
        cursor.run(
            statements.update_run,
            run_id=run_id,
            sequence=last,
            phase=fold.phase,
            force_stop_requested=fold.force_stop_requested,
            terminal_json=None if fold.terminal is None else fold.terminal.model_dump_json(),
            updated_at=self._clock(),
        )
        return fold.snapshot(format_cursor(last)), complete

    def _keep(self, appended: tuple[RunSnapshot, bool]) -> str:
        """After the commit: cache a complete snapshot; return the cursor."""
        snapshot, complete = appended
        if complete:
            self._cache.put(snapshot)
        return snapshot.cursor

    @contextmanager
    def _raw(self, *, write: bool) -> Iterator[Cursor]:
        with raw_transaction(self._engines.read, write=write) as cursor:
            yield cursor

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        with _transaction(self._engines.write) as session:
            yield session

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        with _transaction(self._engines.read) as session:
            yield session


@contextmanager
def _transaction(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


def _run(session: Session, run_id: str) -> RunRow:
    row = session.get(RunRow, run_id)
    if row is None:
        raise RunNotFound(run_id)
    return row


def _lock_run(session: Session, run_id: str) -> None:
    """Lock the run row without reading its documents (lease heartbeats are frequent)."""
    query = select(RunRow.run_id).where(RunRow.run_id == run_id).with_for_update()
    if session.exec(query).first() is None:
        raise RunNotFound(run_id)


def _run_id(session: Session, run_id: str) -> str | None:
    return session.exec(select(RunRow.run_id).where(RunRow.run_id == run_id)).first()


def _summary(row: RunRow) -> RunSummary:
    terminal = row.terminal_json
    return RunSummary(
        run_id=row.run_id,
        title=row.title,
        phase=row.phase,
        cursor=format_cursor(row.sequence),
        created_at=utc(row.created_at),
        updated_at=utc(row.updated_at),
        terminal=None if terminal is None else _TERMINAL.validate_json(terminal),
    )


def _documents(events: Sequence[RunEvent]) -> list[str]:
    return [
        _json_text(event.to_wire(), f"a {event.kind} event", MAX_EVENT_BYTES) for event in events
    ]


def _new_run_id() -> str:
    """``run-`` and 12 lowercase base32 characters (60 random bits): short and URL-safe."""
    return "run-" + base64.b32encode(secrets.token_bytes(10)).decode("ascii")[:12].lower()


def _json_text(value: Any, what: str, limit: int) -> str:
    try:
        text = stored_json(value)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError) as error:  # UnicodeEncodeError: a lone surrogate
        raise PayloadRejected(f"{what} is not plain JSON: {error}") from None
    if size > limit:
        raise PayloadRejected(f"{what} is {size:,} bytes of JSON; at most {limit:,} are stored")
    return text


def _check_text(name: str, value: str, limit: int) -> None:
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        raise InvalidArgument(f"{name} must be 1 to {limit} characters")
    if "\x00" in value or not _is_utf8(value):
        # PostgreSQL text cannot hold NUL; no database holds a lone surrogate.
        raise InvalidArgument(f"{name} must not contain NUL characters or lone surrogates")


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_lease_args(owner: str, ttl_s: float) -> None:
    _check_text("owner", owner, 256)
    if not 0 < ttl_s < math.inf:
        raise InvalidArgument(f"a lease needs a positive, finite ttl_s, not {ttl_s}")
