"""The flow: what is known at one point of a graph, on every path that reaches it.

It tracks which nodes have definitely run (and so may be read), which state paths are
definitely defined and with which type, which executables may have failed (their outputs
must not be read and their writes have not happened), and which writes still wait for an
executable's success or a par's join.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zeroshot_kernel.admission.effects import Effects, merge_conditional
from zeroshot_kernel.admission.facts import (
    OutcomeWrites,
    ParDefinition,
    apply_writes,
    copy_outcomes,
    merge_outcome_writes,
    retain_definitions,
)
from zeroshot_kernel.admission.typepaths import Definitions, FieldPath, overlaps
from zeroshot_kernel.contract.payload import PayloadType


@dataclass
class Flow:
    available: set[str] = field(default_factory=set)
    unavailable: set[str] = field(default_factory=set)
    conditional: dict[str, set[str]] = field(default_factory=dict)
    defined: Definitions = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)
    outcome_writes: OutcomeWrites = field(default_factory=dict)
    outcome_order: list[str] = field(default_factory=list)
    definitions: list[ParDefinition] = field(default_factory=list)

    def copy(self) -> Flow:
        return Flow(
            available=set(self.available),
            unavailable=set(self.unavailable),
            conditional={owner: set(nodes) for owner, nodes in self.conditional.items()},
            defined=dict(self.defined),
            failed=set(self.failed),
            outcome_writes=copy_outcomes(self.outcome_writes),
            outcome_order=list(self.outcome_order),
            definitions=list(self.definitions),
        )

    def absorb(self, effects: Effects) -> None:
        """Move past a node that completed normally."""
        self.available |= effects.definite_nodes
        self.unavailable |= effects.unavailable_nodes
        merge_conditional(self.conditional, effects.conditional_nodes)
        self.definitions = retain_definitions(
            self.definitions, effects.definite_writes, effects.definitions
        )
        apply_writes(self.defined, effects.definite_writes)
        self.definitions = [*self.definitions, *effects.definitions]
        merge_outcome_writes(
            self.outcome_writes, self.outcome_order, effects.outcome_writes, effects.outcome_order
        )
        self.failed = set(effects.exit_failed)
        self._reconcile()
        self._settle()

    def refine(self, succeeded: set[str], failed: set[str]) -> None:
        """Enter a route taken only when ``succeeded`` did and ``failed`` may have failed:
        the first's pending writes happen, the second's success-only nodes are unreadable."""
        self.failed -= succeeded
        for name in failed:
            self.unavailable |= self.conditional.get(name, set())
        self.failed |= failed
        self._reconcile()
        self._settle()

    def _reconcile(self) -> None:
        """Apply each run par's definition change while it is known to have joined and
        revert it while it may have failed."""
        active = [d for d in self.definitions if d.name in self.available]
        resolved: dict[FieldPath, PayloadType | None] = {}
        for definition in active:
            for path, change in definition.transitions.items():
                resolved.setdefault(path, change.before)
        for definition in active:
            if definition.name in self.failed:
                continue
            for target in definition.targets:
                for path in resolved:
                    if overlaps(target, path):
                        resolved[path] = None
            for path, change in definition.transitions.items():
                resolved[path] = change.after
        for path in sorted(resolved):
            value = resolved[path]
            if value is None:
                self.defined.pop(path, None)
            else:
                self.defined[path] = value

    def _settle(self) -> None:
        for name in [name for name in self.outcome_order if name not in self.failed]:
            writes = self.outcome_writes.pop(name, None)
            if writes is not None:
                self.definitions = retain_definitions(self.definitions, writes, [])
                apply_writes(self.defined, writes)
        self.outcome_order = [name for name in self.outcome_order if name in self.outcome_writes]
