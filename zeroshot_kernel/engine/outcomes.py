"""Which outcomes a node may record, and which errors earn another attempt."""

from __future__ import annotations

from zeroshot_kernel.contract.graph import ExecutableNode, StepNode
from zeroshot_kernel.contract.outcome import (
    ErrorOutcome,
    VerifiedOutcome,
    VerifierOutcome,
    WorkerOutcome,
    error,
)
from zeroshot_kernel.contract.payload import check_value

RETRYABLE_CODES = frozenset({"timeout", "crash"})
"""Transient failures; a refusal or a malformed reply would only repeat."""


def is_retryable(outcome: WorkerOutcome) -> bool:
    return isinstance(outcome, ErrorOutcome) and outcome.code in RETRYABLE_CODES


def check_outcome(node: ExecutableNode, outcome: WorkerOutcome) -> WorkerOutcome:
    """The outcome to record for ``node``: unchanged when it fits the node's declared types,
    else ``malformed/malformed_result``. The controller calls this before recording, so that
    the reducer only ever routes typed values."""
    if isinstance(outcome, ErrorOutcome) or _fits(node, outcome):
        return outcome
    return error("malformed", "malformed_result")


def _fits(node: ExecutableNode, outcome: VerifiedOutcome | VerifierOutcome) -> bool:
    if isinstance(node, StepNode):
        return isinstance(outcome, VerifiedOutcome) and not check_value(outcome.output, node.output)
    if not isinstance(outcome, VerifierOutcome) or outcome.signals.keys() != node.signals.keys():
        return False
    return (
        all(label in node.signals[name] for name, label in outcome.signals.items())
        and not check_value(outcome.output, node.output)
        and not check_value(outcome.diagnostic, node.diagnostic)
    )
