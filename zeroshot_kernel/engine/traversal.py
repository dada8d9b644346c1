"""How far a walk got into a subtree, and how it is walking."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.ledger.events import TerminalResult


@dataclass(frozen=True, slots=True)
class Pending:
    """The subtree waits for an execution (or for one to be dispatched)."""


PENDING = Pending()


@dataclass(frozen=True, slots=True)
class Done:
    """The subtree fell through its end; ``position`` is its latest settlement, which orders
    par completions."""

    position: int


@dataclass(frozen=True, slots=True)
class Ended:
    """The subtree reached a terminal after everything up to ``position`` had settled."""

    position: int
    result: TerminalResult

    def after(self, position: int) -> Ended:
        return Ended(max(self.position, position), self.result)


Status = Pending | Done | Ended


@dataclass(frozen=True, slots=True)
class MapItem:
    """The current map item (a box, because a null item is a valid item)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Traversal:
    """``decide``: emit dispatches and progress (a probe only looks). ``cutoff``: ignore
    history after this position, to re-walk a joined par or a map terminal exactly as it was
    when it was decided; a walk with a cutoff never dispatches."""

    map_indices: tuple[int, ...] = ()
    item: MapItem | None = None
    decide: bool = True
    cutoff: int | None = None

    def sees(self, position: int) -> bool:
        return self.cutoff is None or position <= self.cutoff
