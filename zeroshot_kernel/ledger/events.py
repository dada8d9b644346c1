"""The facts a run is made of. Every event is appended to the ledger and never changed.

A run's history is exactly its event list: the controller derives its next decisions
from it, and every view (CLI, widgets, reports) reads it through cursors.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.outcome import WorkerOutcome
from zeroshot_kernel.contract.values import NodeName, PositiveInteger

MAX_LOG_LINE_BYTES = 16 * 1024
MAX_EVENT_BYTES = 1024 * 1024
MAX_ADMITTED_BYTES = 2 * 1024 * 1024
MAX_INPUT_BYTES = MAX_EVENT_BYTES - 64 * 1024
"""The largest initial input a run admits: a step's ``node_started`` event records the
input it reads, so a larger one would be admitted into a run no controller can record
(its envelope, names and map indices, takes far less than the 64 KiB left)."""


def stored_json(value: Any) -> str:
    """``value`` as the ledger stores it: compact JSON, non-ASCII kept (its size in UTF-8
    is what the limits above bound). Raises ``TypeError``/``ValueError`` for a value that
    is not plain JSON (a NaN, a lone surrogate raises on encoding)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


RunPhase = Literal["admitted", "running", "stopping", "finished"]
LogStream = Literal["output", "error", "system"]
VoidReason = Literal["parallel_join", "map_terminal"]
EngineFailure = Literal[
    "attempts_exhausted",
    "force_stopped",
    "runtime_lost",
    "runtime_unavailable",
    "delivery_unconfirmed",
]


class ExecutionReference(ContractModel):
    """Names one dispatch: the node, its stable instance (per occurrence) and the
    execution id (new for every dispatch, retries included)."""

    run_id: str
    node: NodeName
    node_instance: str
    execution: str


class Occurrence(ContractModel):
    """Which occurrence of a node: its name plus the indices of enclosing map items."""

    node: NodeName
    map_indices: list[int] = Field(default_factory=list)


class Usage(ContractModel):
    """Tokens and cost where a harness reports them."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class SucceededResult(ContractModel):
    status: Literal["succeeded"]
    output: Any


class FailedResult(ContractModel):
    status: Literal["failed"]
    reason: str


TerminalResult = Annotated[SucceededResult | FailedResult, Field(discriminator="status")]


def was_stopped(terminal: SucceededResult | FailedResult | None) -> bool:
    """The run ended because someone stopped it (``zeroshot stop``, a monitor's Stop):
    views show that as a neutral "stopped", not as a failure."""
    return isinstance(terminal, FailedResult) and terminal.reason == "force_stopped"


class RunStarted(ContractModel):
    kind: Literal["run_started"] = "run_started"


class NodeStarted(ContractModel):
    kind: Literal["node_started"] = "node_started"
    reference: ExecutionReference
    occurrence: Occurrence
    attempt: PositiveInteger
    input: Any


class Completion(ContractModel):
    reference: ExecutionReference
    outcome: WorkerOutcome


class NodeCompleted(ContractModel):
    kind: Literal["node_completed"] = "node_completed"
    completion: Completion
    detail: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """A human explanation of an error outcome (never a secret), e.g. the timeout."""
    usage: Usage | None = Field(default=None, exclude_if=lambda v: v is None)


class ExecutionVoided(ContractModel):
    kind: Literal["execution_voided"] = "execution_voided"
    reference: ExecutionReference
    reason: VoidReason


class SafeLog(ContractModel):
    """One bounded, redacted line a worker printed."""

    kind: Literal["safe_log"] = "safe_log"
    execution: str | None = None
    stream: LogStream
    line: Annotated[str, Field(max_length=MAX_LOG_LINE_BYTES)]


class ForceStopRequested(ContractModel):
    kind: Literal["force_stop_requested"] = "force_stop_requested"


class ControllerAttached(ContractModel):
    """A controller took the run's lease (the first start, or a resume)."""

    kind: Literal["controller_attached"] = "controller_attached"
    controller: str
    resumed: bool


class Terminal(ContractModel):
    kind: Literal["terminal"] = "terminal"
    result: TerminalResult


RunEvent = Annotated[
    RunStarted
    | NodeStarted
    | NodeCompleted
    | ExecutionVoided
    | SafeLog
    | ForceStopRequested
    | ControllerAttached
    | Terminal,
    Field(discriminator="kind"),
]
