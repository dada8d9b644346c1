"""The data a walk carries through the graph.

A group runs its children on a clone; only promoted state flows back to the parent, while
controls, channels and visit counts always merge up (they are facts, not data).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Scope = tuple[str, tuple[int, ...]]
"""A node name and the map indices of one of its occurrences."""

ControlKey = tuple[str, str, str | None, tuple[int, ...]]
"""(node, source, field, map indices truncated to the node's map depth)."""

Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Channels:
    """The last outcome of an executable occurrence, as write bindings read it."""

    out: Any
    signals: dict[str, str]
    diagnostic: Any


@dataclass(slots=True)
class Context:
    """``state`` is never mutated in place (updates copy along the path), so clones share it.

    ``written`` holds the paths written in this scope since it was opened; a par copies only
    what its winners actually wrote. ``visits`` counts how often each occurrence was reached,
    which tells loop iterations apart.
    """

    state: Any
    controls: dict[ControlKey, str] = field(default_factory=dict)
    channels: dict[Scope, Channels] = field(default_factory=dict)
    visits: dict[Scope, int] = field(default_factory=dict)
    written: set[Path] = field(default_factory=set)

    def clone(self, *, fresh_writes: bool = False) -> Context:
        return Context(
            state=self.state,
            controls=dict(self.controls),
            channels=dict(self.channels),
            visits=dict(self.visits),
            written=set() if fresh_writes else set(self.written),
        )

    def merge_facts(self, other: Context) -> None:
        """Take over ``other``'s controls, channels and visit counts (not its state)."""
        self.controls.update(other.controls)
        self.channels.update(other.channels)
        for scope, count in other.visits.items():
            self.visits[scope] = max(count, self.visits.get(scope, 0))

    def replace_with(self, other: Context) -> None:
        self.state = other.state
        self.controls = other.controls
        self.channels = other.channels
        self.visits = other.visits
        self.written = other.written

    def visit(self, scope: Scope) -> int:
        """Count one more visit of ``scope`` and return its number (1 for the first)."""
        count = self.visits.get(scope, 0) + 1
        self.visits[scope] = count
        return count
