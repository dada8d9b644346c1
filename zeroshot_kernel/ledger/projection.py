"""Reading a run's snapshot from its rows, and writing what an append changed.

A run row holds the scalar part of the snapshot; each execution row points at the events
that started and settled it, which hold its input and outcome. So an append writes only
what its batch changed, and a snapshot is read either whole (cold: one row per execution)
or by folding the few events newer than a cached one. Every read is bounded by the run
row's sequence, so it is consistent with that row at any isolation level.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import TypeAdapter
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Engine,
    String,
    bindparam,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.orm import Mapped
from sqlalchemy.sql.selectable import ScalarSelect
from sqlmodel import col

from zeroshot_kernel.ledger.cursor import format_cursor, parse_cursor
from zeroshot_kernel.ledger.events import (
    ExecutionVoided,
    NodeCompleted,
    NodeStarted,
    RunEvent,
    RunPhase,
    SafeLog,
    TerminalResult,
)
from zeroshot_kernel.ledger.state import (
    SNAPSHOT_KINDS,
    ExecutionSnapshot,
    RunSnapshot,
    fold_recorded,
    settled_state,
    started_execution,
)
from zeroshot_kernel.ledger.statements import Cursor, Row, Statement
from zeroshot_kernel.ledger.tables import EventRow, ExecutionRow, LeaseRow, RunRow

_EVENT = TypeAdapter[RunEvent](RunEvent)
_SETTLEMENT = TypeAdapter[NodeCompleted | ExecutionVoided](NodeCompleted | ExecutionVoided)
_TERMINAL = TypeAdapter[TerminalResult](TerminalResult)

CATCH_UP_SLACK = 1024
"""Fold newer events into a cached snapshot while there are at most this many more than
it has executions; past that, reading the executions afresh is cheaper."""


@dataclass(frozen=True, slots=True)
class Header:
    """The run row: the scalar part of the run's snapshot."""

    run_id: str
    title: str
    phase: RunPhase
    sequence: int
    force_stop_requested: bool
    terminal_json: str | None


def _kinds_in(kinds: Iterable[str]) -> ColumnElement[bool]:
    """``kind IN (...)`` with the kinds as literals (they are validated event kinds)."""
    return col(EventRow.kind).in_([literal_column(f"'{kind}'") for kind in sorted(kinds)])


class Statements:
    """Every hot statement, compiled once for one engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._tails: dict[tuple[frozenset[str] | None, bool], Statement] = {}
        run = bindparam("run_id", type_=String)
        sequence = bindparam("sequence", type_=BigInteger)
        header = select(
            col(RunRow.run_id),
            col(RunRow.title),
            col(RunRow.phase),
            col(RunRow.sequence),
            col(RunRow.force_stop_requested),
            col(RunRow.terminal_json),
        ).where(col(RunRow.run_id) == run)
        self.header = Statement(engine, header)
        self.lease_holder = Statement(
            engine,
            select(col(LeaseRow.owner), col(LeaseRow.expires_at)).where(
                col(LeaseRow.run_id) == run
            ),
        )
        self.header_locked = Statement(engine, header.with_for_update())
        execution_run = col(ExecutionRow.run_id)
        started_at = col(ExecutionRow.started_sequence)
        settled_at = col(ExecutionRow.settled_sequence)

        def event_at(position: Mapped[int] | Mapped[int | None]) -> ScalarSelect[str]:
            # A correlated lookup by primary key: the executions drive the query (a join
            # lets the planner scan the run's events instead).
            return (
                select(col(EventRow.event_json))
                .where(
                    col(EventRow.run_id) == execution_run,
                    col(EventRow.sequence) == position,
                    col(EventRow.sequence) <= sequence,
                )
                .scalar_subquery()
            )

        executions = (
            select(started_at, event_at(started_at), settled_at, event_at(settled_at))
            .where(execution_run == run, started_at <= sequence)
            .order_by(started_at)
        )
        self.executions = Statement(engine, executions)
        self.execution = Statement(
            engine, executions.where(col(ExecutionRow.execution) == bindparam("execution"))
        )
        self.active = Statement(engine, executions.where(settled_at.is_(None)))
        self.changes = self.tail(SNAPSHOT_KINDS, limited=False)
        self.insert_event = Statement(
            engine,
            insert(EventRow).values(
                run_id=run,
                sequence=bindparam("sequence"),
                kind=bindparam("kind"),
                event_json=bindparam("event_json"),
            ),
        )
        self.insert_execution = Statement(
            engine,
            insert(ExecutionRow).values(
                run_id=run,
                execution=bindparam("execution"),
                started_sequence=bindparam("started"),
                settled_sequence=bindparam("settled"),
            ),
        )
        self.settle_execution = Statement(
            engine,
            update(ExecutionRow)
            .where(execution_run == run, col(ExecutionRow.execution) == bindparam("execution"))
            .values(settled_sequence=bindparam("settled")),
        )
        self.update_run = Statement(
            engine,
            update(RunRow)
            .where(col(RunRow.run_id) == run)
            .values(
                sequence=bindparam("sequence"),
                phase=bindparam("phase"),
                force_stop_requested=bindparam("force_stop_requested"),
                terminal_json=bindparam("terminal_json"),
                updated_at=bindparam("updated_at"),
            ),
        )

    def tail(self, kinds: Iterable[str] | None, *, limited: bool) -> Statement:
        """Events in ``(after, sequence]``, optionally of some kinds and up to ``limit``."""
        key = (None if kinds is None else frozenset(kinds), limited)
        statement = self._tails.get(key)
        if statement is None:
            query = select(col(EventRow.sequence), col(EventRow.event_json)).where(
                col(EventRow.run_id) == bindparam("run_id", type_=String),
                col(EventRow.sequence) > bindparam("after", type_=BigInteger),
                col(EventRow.sequence) <= bindparam("sequence", type_=BigInteger),
            )
            if key[0] is not None:
                query = query.where(_kinds_in(key[0]))
            query = query.order_by(col(EventRow.sequence))
            if limited:
                query = query.limit(bindparam("limit"))
            statement = self._tails[key] = Statement(self._engine, query)
        return statement


def read_header(
    cursor: Cursor, statements: Statements, run_id: str, *, lock: bool
) -> Header | None:
    row = cursor.first(statements.header_locked if lock else statements.header, run_id=run_id)
    if row is None:
        return None
    run, title, phase, sequence, force_stop, terminal = row
    return Header(run, title, phase, sequence, bool(force_stop), terminal)


def read_snapshot(
    cursor: Cursor, statements: Statements, header: Header, cached: RunSnapshot | None
) -> RunSnapshot:
    """The snapshot at the header's sequence: ``cached`` itself, ``cached`` with the newer
    events folded in, or read afresh."""
    if cached is not None:
        known = parse_cursor(cached.cursor)
        if known == header.sequence:
            return cached
        if known < header.sequence <= known + len(cached.executions) + CATCH_UP_SLACK:
            rows = cursor.rows(
                statements.changes, run_id=header.run_id, after=known, sequence=header.sequence
            )
            recorded = ((sequence, _EVENT.validate_json(doc)) for sequence, doc in rows)
            return fold_recorded(cached, recorded, header.sequence)
    rows = cursor.rows(statements.executions, run_id=header.run_id, sequence=header.sequence)
    return snapshot_of(header, _executions(rows))


def partial_snapshot(
    cursor: Cursor, statements: Statements, header: Header, ids: Iterable[str]
) -> RunSnapshot:
    """The header with only the executions that ``ids`` name and the active ones: all that
    the rules consult for a batch that references ``ids``."""
    bounds = {"run_id": header.run_id, "sequence": header.sequence}
    rows = cursor.rows(statements.active, **bounds)
    for execution in ids:
        rows += cursor.rows(statements.execution, execution=execution, **bounds)
    rows.sort(key=lambda row: int(row[0]))
    return snapshot_of(header, _executions(rows))


def snapshot_of(header: Header, executions: dict[str, ExecutionSnapshot]) -> RunSnapshot:
    terminal = header.terminal_json
    return RunSnapshot(
        run_id=header.run_id,
        title=header.title,
        cursor=format_cursor(header.sequence),
        phase=header.phase,
        force_stop_requested=header.force_stop_requested,
        executions=executions,
        terminal=None if terminal is None else _TERMINAL.validate_json(terminal),
    )


def _executions(rows: list[Row]) -> dict[str, ExecutionSnapshot]:
    executions: dict[str, ExecutionSnapshot] = {}
    for started_at, started_json, settled_at, settled_json in rows:
        event = NodeStarted.model_validate_json(started_json)
        entry = started_execution(event, format_cursor(started_at))
        if settled_json is not None:
            settlement = _SETTLEMENT.validate_json(settled_json)
            state = settled_state(settlement, format_cursor(settled_at))
            entry = entry.model_copy(update={"state": state})
        executions[event.reference.execution] = entry
    return executions


def referenced(events: Iterable[RunEvent]) -> list[str]:
    """The execution ids a batch names (the executions its rules look at)."""
    ids: dict[str, None] = {}
    for event in events:
        match event:
            case NodeStarted() | ExecutionVoided():
                ids[event.reference.execution] = None
            case NodeCompleted():
                ids[event.completion.reference.execution] = None
            case SafeLog(execution=str(execution)):
                ids[execution] = None
    return list(ids)
