"""Why a run failed, derived from its events alone.

A terminal reason such as ``scouting_failed`` names the graph's exit, not the cause. The
cause is the execution whose outcome routed the run there: its node, its error code, the
harness's explanation and the last lines the worker wrote to its error stream. Every view
(``status``, ``logs``, ``research show``, the monitor and the report) reads it from here,
so they all say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import (
    FailedResult,
    NodeCompleted,
    NodeStarted,
    RunEvent,
    SafeLog,
    Terminal,
)

ERROR_LINES = 5
"""How many of the failing worker's last error-stream lines a cause keeps."""
MAX_LINE_CHARS = 300


class FailureCause(ContractModel):
    """The failing execution behind a failed run's terminal reason."""

    reason: str
    """The run's terminal reason (the graph's fail exit, or an engine failure)."""
    node: str | None = None
    execution: str | None = None
    code: str | None = None
    """The error code (``crash``, ``timeout``, ``malformed``, ``refusal``), or ``verdict``
    when a verifier's answer routed the run to its fail exit."""
    error_reason: str | None = None
    detail: str | None = None
    error_lines: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        """One line: ``failed: REASON (node N: code [error reason] - detail)``."""
        if self.node is None:
            return f"failed: {self.reason}"
        parts = [self.code or "failed"]
        if self.error_reason and self.error_reason != "declared_failure":
            parts.append(f"[{self.error_reason}]")
        cause = " ".join(parts)
        if self.detail:
            cause += f" - {_clip(self.detail)}"
        return f"failed: {self.reason} (node {self.node}: {cause})"

    def lines(self) -> list[str]:
        """The summary, then the worker's own last error lines, indented."""
        return [self.summary(), *(f"    {line}" for line in self.error_lines)]


def explain_failure(events: Iterable[RunEvent]) -> FailureCause | None:
    """The cause of a failed run, or None when the run has not failed (yet).

    The culprit is the latest error among each node instance's last settlement (an error
    that a retry then repaired is no cause); without one, a rejecting verdict that settled
    last."""
    nodes: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    settled: dict[str, NodeCompleted] = {}
    terminal: FailedResult | None = None
    for event in events:
        match event:
            case NodeStarted():
                nodes[event.reference.execution] = event.reference.node
            case SafeLog(stream="error", execution=str() as execution):
                errors.setdefault(execution, []).append(event.line)
            case NodeCompleted():
                instance = event.completion.reference.node_instance
                settled.pop(instance, None)
                settled[instance] = event
            case Terminal(result=FailedResult() as result):
                terminal = result
    if terminal is None:
        return None
    if terminal.reason == "force_stopped":  # someone stopped it: no execution is to blame
        return FailureCause(reason=terminal.reason)
    culprit = _culprit(list(settled.values()))
    if culprit is None:
        return FailureCause(reason=terminal.reason)
    reference = culprit.completion.reference
    outcome = culprit.completion.outcome
    lines = errors.get(reference.execution, [])[-ERROR_LINES:]
    return FailureCause(
        reason=terminal.reason,
        node=nodes.get(reference.execution, reference.node),
        execution=reference.execution,
        code=outcome.code if isinstance(outcome, ErrorOutcome) else "verdict",
        error_reason=outcome.reason if isinstance(outcome, ErrorOutcome) else None,
        detail=culprit.detail or _verdict(outcome),
        error_lines=[_clip(line) for line in lines],
    )


def _culprit(settlements: list[NodeCompleted]) -> NodeCompleted | None:
    for event in reversed(settlements):
        if isinstance(event.completion.outcome, ErrorOutcome):
            return event
    if settlements and isinstance(settlements[-1].completion.outcome, VerifierOutcome):
        return settlements[-1]
    return None


def _verdict(outcome: object) -> str | None:
    if isinstance(outcome, VerifierOutcome):
        return ", ".join(f"{k}={v}" for k, v in sorted(outcome.signals.items())) or None
    return None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 3] + "..."
