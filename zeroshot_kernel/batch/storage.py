"""Batches in the ledger's database: one row per batch, one per notebook of it.

The tables sit beside the ledger's own (see ``ledger.side_tables``), so a batch is seen
wherever its runs are: ``zeroshot batch status``, the run browser, a report notebook.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import Text
from sqlmodel import Field, Session, col, select

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.exceptions import NotFound
from zeroshot_kernel.ledger.side_tables import SideStore, SideTable

ItemStatus = Literal["pending", "running", "succeeded", "failed"]


class BatchNotFound(NotFound):
    """No batch of that id in this ledger."""


class BatchRow(SideTable, table=True):
    __tablename__ = "zeroshot_batches"

    batch_id: str = Field(max_length=64, primary_key=True)
    notebook: str = Field(sa_type=Text)
    output_dir: str = Field(sa_type=Text)
    options_json: str = Field(sa_type=Text)
    created_at: float = Field(index=True)


class BatchItemRow(SideTable, table=True):
    __tablename__ = "zeroshot_batch_items"

    batch_id: str = Field(max_length=64, primary_key=True)
    index: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    parameters_json: str = Field(sa_type=Text)
    status: str = Field(max_length=16)
    attempts: int = 0
    started_at: float | None = None
    duration_s: float | None = None
    output: str | None = Field(default=None, sa_type=Text)
    error: str | None = Field(default=None, sa_type=Text)
    results_json: str | None = Field(default=None, sa_type=Text)


class BatchItem(ContractModel):
    """One notebook of a batch: its parameters, and how it went."""

    index: int
    parameters: dict[str, Any]
    status: ItemStatus
    attempts: int = 0
    started_at: float | None = None
    duration_s: float | None = None
    output: str | None = None
    """The executed notebook's path."""
    error: str | None = None
    results: dict[str, Any] | None = None
    """What the notebook recorded (``zeroshot_kernel.batch.record``)."""


class BatchOptions(ContractModel):
    """How a batch runs; kept so that ``resume`` runs the rest the same way."""

    timeout_s: float | None = None
    kernel_name: str | None = None
    start_retries: int = 3
    cwd: str | None = None


class BatchStatus(ContractModel):
    """A batch and every item of it (``zeroshot batch status --json``)."""

    batch_id: str
    notebook: str
    output_dir: str
    created_at: float
    options: BatchOptions
    items: list[BatchItem]

    def count(self, status: ItemStatus) -> int:
        return sum(item.status == status for item in self.items)

    @property
    def finished(self) -> bool:
        return all(item.status in ("succeeded", "failed") for item in self.items)


def new_batch_id() -> str:
    return "batch-" + base64.b32encode(secrets.token_bytes(10)).decode("ascii")[:12].lower()


class BatchStore(SideStore):
    """The batch tables of one ledger database (a SQLAlchemy URL)."""

    schema_name = "batches"
    tables = (BatchRow, BatchItemRow)
    schema_version = 1
    migrations = ()

    def create(
        self,
        notebook: str,
        output_dir: str,
        parameter_sets: Sequence[dict[str, Any]],
        options: BatchOptions,
        *,
        batch_id: str | None = None,
    ) -> str:
        """Record a batch of pending items under ``batch_id`` (default: a new id)."""
        batch_id = batch_id or new_batch_id()
        with self._session(write=True) as session:
            session.add(
                BatchRow(
                    batch_id=batch_id,
                    notebook=notebook,
                    output_dir=output_dir,
                    options_json=options.model_dump_json(),
                    created_at=time.time(),
                )
            )
            session.add_all(
                BatchItemRow(
                    batch_id=batch_id,
                    index=index,
                    status="pending",
                    parameters_json=json.dumps(parameters, sort_keys=True),
                )
                for index, parameters in enumerate(parameter_sets)
            )
        return batch_id

    def status(self, batch_id: str) -> BatchStatus:
        with self._session(write=False) as session:
            batch = session.get(BatchRow, batch_id)
            if batch is None:
                raise BatchNotFound(f"no batch {batch_id} in ledger {self.display_url}")
            rows = session.exec(
                select(BatchItemRow)
                .where(col(BatchItemRow.batch_id) == batch_id)
                .order_by(col(BatchItemRow.index))
            )
            items = [_item(row) for row in rows]
        return BatchStatus(
            batch_id=batch_id,
            notebook=batch.notebook,
            output_dir=batch.output_dir,
            created_at=batch.created_at,
            options=BatchOptions.model_validate_json(batch.options_json),
            items=items,
        )

    def batches(self) -> list[BatchStatus]:
        """Every batch, newest first."""
        with self._session(write=False) as session:
            found = list(
                session.exec(select(BatchRow.batch_id).order_by(col(BatchRow.created_at).desc()))
            )
        return [self.status(batch_id) for batch_id in found]

    def start(self, batch_id: str, index: int) -> None:
        with self._session(write=True) as session:
            row = _row(session, batch_id, index)
            row.status, row.started_at = "running", time.time()
            row.attempts += 1
            row.error = row.duration_s = row.results_json = None

    def settle(
        self,
        batch_id: str,
        index: int,
        *,
        status: ItemStatus,
        duration_s: float,
        output: str | None,
        error: str | None,
        results: dict[str, Any] | None,
    ) -> None:
        with self._session(write=True) as session:
            row = _row(session, batch_id, index)
            row.status, row.duration_s, row.output, row.error = status, duration_s, output, error
            row.results_json = json.dumps(results) if results is not None else None


def _row(session: Session, batch_id: str, index: int) -> BatchItemRow:
    row = session.get(BatchItemRow, (batch_id, index))
    if row is None:
        raise BatchNotFound(f"batch {batch_id} has no item {index}")
    return row


def _item(row: BatchItemRow) -> BatchItem:
    return BatchItem(
        index=row.index,
        parameters=json.loads(row.parameters_json),
        status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts,
        started_at=row.started_at,
        duration_s=row.duration_s,
        output=row.output,
        error=row.error,
        results=json.loads(row.results_json) if row.results_json is not None else None,
    )
