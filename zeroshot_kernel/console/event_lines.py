"""Human-readable lines for run events, shared by ``run``, ``watch`` and ``logs``."""

from __future__ import annotations

import json
from typing import Any

from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import (
    ControllerAttached,
    ExecutionVoided,
    ForceStopRequested,
    NodeCompleted,
    NodeStarted,
    RunEvent,
    RunStarted,
    SafeLog,
    SucceededResult,
    Terminal,
    TerminalResult,
)

UNCONTAINED_NOTE = (
    "UNCONTAINED (--sandbox none): the model-written code of this run (agent tools, "
    "checks, experiments) runs with your full powers"
)


def containment_note(sandbox: str) -> str | None:
    """The warning a run's views print when its sandbox mode is ``none``."""
    return UNCONTAINED_NOTE if sandbox == "none" else None


class EventRenderer:
    """Remembers which node each execution belongs to, so log lines can say it."""

    def __init__(self) -> None:
        self._nodes: dict[str, str] = {}

    def line(self, cursor: str, event: RunEvent) -> str:
        return f"{cursor:>8}  {self._describe(event)}"

    def _describe(self, event: RunEvent) -> str:
        match event:
            case NodeStarted():
                self._nodes[event.reference.execution] = event.reference.node
                retry = f" (attempt {event.attempt})" if event.attempt > 1 else ""
                return f"started   {event.reference.node_instance}{retry}"
            case NodeCompleted():
                reference = event.completion.reference
                return f"completed {reference.node_instance}: " + _outcome(event)
            case ExecutionVoided():
                return f"voided    {event.reference.node_instance} ({event.reason})"
            case SafeLog():
                node = self._nodes.get(event.execution or "", "run")
                return f"{node:>9} | {event.line}"
            case Terminal():
                return "finished  " + describe_result(event.result)
            case ForceStopRequested():
                return "stop requested"
            case ControllerAttached():
                return f"controller {event.controller} {'resumed' if event.resumed else 'started'}"
            case RunStarted():
                return "run started"
        return event.kind  # pragma: no cover - every kind is matched above


def describe_result(result: TerminalResult) -> str:
    if isinstance(result, SucceededResult):
        return f"succeeded: {_short(result.output)}"
    return f"failed: {result.reason}"


def _outcome(event: NodeCompleted) -> str:
    outcome = event.completion.outcome
    if isinstance(outcome, ErrorOutcome):
        detail = f" - {event.detail}" if event.detail else ""
        return f"error {outcome.code} ({outcome.reason}){detail}"
    if isinstance(outcome, VerifierOutcome):
        signals = ", ".join(f"{k}={v}" for k, v in sorted(outcome.signals.items()))
        return f"verdict {signals or '(no signals)'}"
    return f"ok {_short(outcome.output)}"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
