"""Usage of a run: the tokens and cost each execution reported, and their sum."""

from __future__ import annotations

from collections.abc import Iterable

from zeroshot_kernel.harness.conversation import add_usage
from zeroshot_kernel.ledger.events import NodeCompleted, RunEvent, Usage


def run_usage(events: Iterable[RunEvent]) -> Usage | None:
    """The sum over every ``node_completed`` that carries usage (None if none does)."""
    total: Usage | None = None
    for event in events:
        if isinstance(event, NodeCompleted):
            total = add_usage(total, event.usage)
    return total


def execution_usage(events: Iterable[RunEvent]) -> list[tuple[str, str, Usage]]:
    """``(execution, node, usage)`` of every completion that reported usage, in order."""
    return [
        (event.completion.reference.execution, event.completion.reference.node, event.usage)
        for event in events
        if isinstance(event, NodeCompleted) and event.usage is not None
    ]


def describe_usage(usage: Usage) -> str:
    """``1,234 input + 56 output tokens, $0.0123`` (only what was reported)."""
    parts = []
    if usage.input_tokens is not None or usage.output_tokens is not None:
        parts.append(
            f"{usage.input_tokens or 0:,} input + {usage.output_tokens or 0:,} output tokens"
        )
    if usage.cost_usd is not None:
        parts.append(f"${usage.cost_usd:.4f}")
    return ", ".join(parts) or "reported, without counts"
