"""What a Python worker author uses: the context a worker may accept, a verifier's
verdict, and how to refuse.

A worker is any importable callable ``package.module:function`` (sync or async) taking
the node's input (JSON-ready data) and returning its output::

    def summarise(task: dict) -> dict:
        return {"summary": task["text"][:80]}

A verifier returns a :class:`Verdict`::

    from zeroshot_kernel.workers import Verdict

    def review(draft: dict) -> Verdict:
        ok = len(draft["summary"]) > 10
        return Verdict(signals={"verdict": "accepted" if ok else "rejected"},
                       diagnostic={"message": "" if ok else "too short"})

Declare a parameter named ``context`` to receive a :class:`WorkerContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.sandbox import Containment

RefusalReason = Literal["policy_denied", "interactive_input_required", "authentication_required"]


@dataclass(frozen=True)
class Verdict:
    """A verifier's answer: one label per declared signal, plus output and diagnostic."""

    signals: Mapping[str, str]
    output: Any = None
    diagnostic: Any = None


class Refusal(Refused):
    """Raise to refuse the work (recorded as a ``refusal`` outcome, never retried)."""

    def __init__(self, message: str = "", reason: RefusalReason = "policy_denied") -> None:
        super().__init__(message or reason)
        self.reason: RefusalReason = reason


@dataclass(frozen=True)
class WorkerContext:
    """Facts about the current execution, for workers that ask for ``context``."""

    run_id: str
    node: str
    execution: str
    attempt: int
    workspace: Path
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    log: Callable[[str], None] = field(default=print, repr=False)
    containment: Containment = field(default_factory=Containment)
    """How the run boxes processes that run model-written code (trusted nodes that run
    checks or experiments open their boxes with it)."""
