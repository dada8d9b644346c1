"""The durable run ledger: runs, their append-only events, snapshots, cursors and leases.

Every write is one short transaction that locks the run first (``BEGIN IMMEDIATE`` on
SQLite, ``SELECT ... FOR UPDATE`` on PostgreSQL), checks the whole batch against the
event rules, then writes the events and the new snapshot together. Reads take the
snapshot row and the events up to its sequence, so a tail never runs ahead of the
snapshot it is returned with, whatever the database's isolation level.
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
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from zeroshot_kernel.contract.canonical import dump_canonical
from zeroshot_kernel.ledger import leases
from zeroshot_kernel.ledger.cursor import format_cursor, parse_cursor
from zeroshot_kernel.ledger.dialects import open_engines
from zeroshot_kernel.ledger.errors import (
    CursorAhead,
    IdempotencyConflict,
    InvalidArgument,
    PayloadRejected,
    RunNotFound,
)
from zeroshot_kernel.ledger.events import (
    MAX_ADMITTED_BYTES,
    MAX_EVENT_BYTES,
    ForceStopRequested,
    RunEvent,
    TerminalResult,
)
from zeroshot_kernel.ledger.records import Lease, RunSummary, utc
from zeroshot_kernel.ledger.schema import ensure_schema
from zeroshot_kernel.ledger.state import EVENT_KINDS, RunSnapshot, admitted_snapshot, replay
from zeroshot_kernel.ledger.tables import AdmittedRow, EventRow, LeaseRow, RunRow

WORKSPACE_LEDGER = Path(".zeroshot") / "ledger.db"
MAX_TITLE_CHARS = 256
MAX_KEY_CHARS = 256

_EVENT = TypeAdapter[RunEvent](RunEvent)
_TERMINAL = TypeAdapter[TerminalResult](TerminalResult)


class Ledger:
    """One ledger database, shared safely by any number of threads and processes."""

    def __init__(self, url: str | URL, *, clock: Callable[[], float] = time.time) -> None:
        """Open (creating if needed) the ledger at a SQLAlchemy ``url``.

        ``clock`` returns UNIX seconds; every timestamp and lease expiry comes from it, so
        machines sharing a database agree as far as their clocks do.
        """
        self._engines = open_engines(url)
        self._clock = clock
        try:
            with self._writing() as session:
                ensure_schema(session)
        except BaseException:
            self._engines.dispose()
            raise

    @classmethod
    def for_workspace(
        cls, workspace: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> Self:
        """The workspace's own ledger, a SQLite file at ``<workspace>/.zeroshot/ledger.db``."""
        path = Path(workspace).resolve() / WORKSPACE_LEDGER
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls(URL.create("sqlite", database=str(path)), clock=clock)

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
        digest = hashlib.sha256(dump_canonical(admitted, allow_floats=True)).hexdigest()
        try:
            return self._create_once(document, digest, title, submission_key)
        except IntegrityError:
            # Another process committed the same key (or, vanishingly, the same id) first;
            # the retry sees its row.
            return self._create_once(document, digest, title, submission_key)

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
                    snapshot_json=snapshot.model_dump_json(),
                    created_at=now,
                    updated_at=now,
                )
            )
            session.flush()  # the run row first: the admitted row references it
            session.add(AdmittedRow(run_id=run_id, document=document))
        return run_id

    def run_exists(self, run_id: str) -> bool:
        with self._reading() as session:
            return _run_id(session, run_id) is not None

    def admitted(self, run_id: str) -> dict[str, Any]:
        """The admitted submission, exactly as it was recorded."""
        with self._reading() as session:
            stored = session.get(AdmittedRow, run_id)
        if stored is None:
            raise RunNotFound(run_id)
        admitted: dict[str, Any] = json.loads(stored.document)
        return admitted

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first, without reading snapshots or events."""
        query = (
            select(RunRow)
            # Listing must not read documents; sqlmodel types columns as their values.
            .options(defer(RunRow.snapshot_json))  # type: ignore[arg-type]
            .order_by(col(RunRow.created_at), col(RunRow.run_id))
        )
        with self._reading() as session:
            rows = session.exec(query).all()
        return [_summary(row) for row in rows]

    # -- events -------------------------------------------------------------------------

    def append(self, run_id: str, events: Sequence[RunEvent]) -> str:
        """Append a batch atomically and return the run's new cursor.

        Events are checked in order against the run's rules; if any is rejected
        (:class:`EventRejected`) or too large (:class:`PayloadRejected`), none is written.
        """
        if not events:
            raise InvalidArgument("a batch must hold at least one event")
        with self._writing() as session:
            row = _locked_run(session, run_id)
            return self._append_locked(session, row, _snapshot_of(row), events)

    def request_force_stop(self, run_id: str) -> str:
        """Record the intent to force-stop once; repeating it, or asking after the run
        finished, changes nothing. Returns the run's cursor."""
        with self._writing() as session:
            row = _locked_run(session, run_id)
            snapshot = _snapshot_of(row)
            if snapshot.force_stop_requested or snapshot.terminal is not None:
                return snapshot.cursor
            return self._append_locked(session, row, snapshot, [ForceStopRequested()])

    def snapshot(self, run_id: str) -> RunSnapshot:
        """The run's current projection (its ``cursor`` is the last event's)."""
        with self._reading() as session:
            return _snapshot_of(_run(session, run_id))

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
        with self._reading() as session:
            row = _run(session, run_id)
            if start > row.sequence:
                raise CursorAhead(format_cursor(start), format_cursor(row.sequence))
            query = select(EventRow.sequence, EventRow.event_json).where(
                EventRow.run_id == run_id,
                col(EventRow.sequence) > start,
                col(EventRow.sequence) <= row.sequence,
            )
            if kinds is not None:
                query = query.where(col(EventRow.kind).in_(sorted(kinds)))
            query = query.order_by(col(EventRow.sequence)).limit(limit)
            tail = session.exec(query).all()
        return _snapshot_of(row), [
            (format_cursor(sequence), _EVENT.validate_json(document)) for sequence, document in tail
        ]

    # -- leases -------------------------------------------------------------------------

    def acquire_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Become the run's controller for ``ttl_s`` seconds, unless another live one is."""
        _check_lease_args(owner, ttl_s)
        with self._writing() as session:
            _lock_run(session, run_id)
            return leases.acquire(session, run_id, owner, self._clock(), ttl_s)

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Heartbeat: extend ``owner``'s live lease; False means it was lost."""
        _check_lease_args(owner, ttl_s)
        with self._writing() as session:
            _lock_run(session, run_id)
            return leases.renew(session, run_id, owner, self._clock(), ttl_s)

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a controller that finished or is shutting down cleanly)."""
        with self._writing() as session:
            _lock_run(session, run_id)
            leases.release(session, run_id, owner)

    def lease(self, run_id: str) -> Lease | None:
        """The run's lease as last written (possibly lapsed), or None if nobody holds it."""
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

    def _append_locked(
        self, session: Session, row: RunRow, snapshot: RunSnapshot, events: Sequence[RunEvent]
    ) -> str:
        """Check the batch, then stage its events and the new snapshot on the locked row."""
        documents = [
            _json_text(event.to_wire(), f"a {event.kind} event", MAX_EVENT_BYTES)
            for event in events
        ]
        snapshot = replay(snapshot, events)
        first = row.sequence + 1
        session.add_all(
            EventRow(run_id=row.run_id, sequence=first + offset, kind=event.kind, event_json=doc)
            for offset, (event, doc) in enumerate(zip(events, documents, strict=True))
        )
        row.sequence = parse_cursor(snapshot.cursor)
        row.phase = snapshot.phase
        row.snapshot_json = snapshot.model_dump_json()
        if snapshot.terminal is not None:
            row.terminal_json = snapshot.terminal.model_dump_json()
        row.updated_at = self._clock()
        return snapshot.cursor

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


def _locked_run(session: Session, run_id: str) -> RunRow:
    row = session.exec(select(RunRow).where(RunRow.run_id == run_id).with_for_update()).first()
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


def _snapshot_of(row: RunRow) -> RunSnapshot:
    return RunSnapshot.model_validate_json(row.snapshot_json)


def _new_run_id() -> str:
    """``run-`` and 12 lowercase base32 characters (60 random bits): short and URL-safe."""
    return "run-" + base64.b32encode(secrets.token_bytes(10)).decode("ascii")[:12].lower()


def _json_text(value: Any, what: str, limit: int) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError) as error:  # UnicodeEncodeError: a lone surrogate
        raise PayloadRejected(f"{what} is not plain JSON: {error}") from None
    if size > limit:
        raise PayloadRejected(f"{what} is {size} bytes of JSON; at most {limit} are stored")
    return text


def _check_text(name: str, value: str, limit: int) -> None:
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        raise InvalidArgument(f"{name} must be 1 to {limit} characters")


def _check_lease_args(owner: str, ttl_s: float) -> None:
    _check_text("owner", owner, 256)
    if not 0 < ttl_s < math.inf:
        raise InvalidArgument(f"a lease needs a positive, finite ttl_s, not {ttl_s}")
