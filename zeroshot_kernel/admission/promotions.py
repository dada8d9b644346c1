"""Promotion: what a group hands back to its parent when it exits.

Only promoted paths leave a group. Each must exist in the group state and in the parent
state with a compatible type, and must be defined whenever the group completes: on every
completing path (seq, loop, all-join par), on every completing alternative (choice,
any/quorum/first par), or by an indexed write in the body (map).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from zeroshot_kernel.admission.effects import Effects
from zeroshot_kernel.admission.locations import Loc, item
from zeroshot_kernel.admission.typepaths import FieldPath, is_required_path, path_type
from zeroshot_kernel.admission.verifier_state import VerifierState
from zeroshot_kernel.contract.payload import ArrayType, PayloadType, is_subtype


class Rule(Enum):
    """When a promoted path counts as defined."""

    DEFINITE = "definite"
    EVERY_ALTERNATIVE = "every_alternative"
    MAP = "map"


_UNDEFINED = {
    Rule.DEFINITE: (
        "promoted path is not definitely defined when the group completes; write it on "
        "every path through the group or declare it required"
    ),
    Rule.EVERY_ALTERNATIVE: (
        "promoted path is not written by every route that completes; write it on each "
        "route or drop the promotion"
    ),
    Rule.MAP: (
        "promoted path gets no element from the map body; write it in the body (one element "
        "per item) or drop the promotion"
    ),
}


def restrict_promotions(
    run: VerifierState,
    effects: Effects,
    *,
    group_state: PayloadType,
    enclosing_state: PayloadType,
    promoted: Sequence[Sequence[str]],
    rule: Rule,
    overrides: Mapping[FieldPath, PayloadType] | None,
    loc: Loc,
) -> None:
    """Check each promoted path, then drop every write that stays inside the group."""
    for position, raw in enumerate(promoted):
        path = tuple(raw)
        promoted_loc = item(loc, "promotedStatePaths", position)
        local = path_type(group_state, path)
        if local is None:
            run.emit(
                "schema_safety",
                "promoted path is not in the group's state; declare it there or drop the promotion",
                promoted_loc,
            )
            continue
        target = (
            overrides[path]
            if overrides is not None and path in overrides
            else path_type(enclosing_state, path)
        )
        if target is None:
            run.emit(
                "schema_safety",
                "promoted path is not in the enclosing state; declare it there or drop the "
                "promotion",
                promoted_loc,
            )
        elif any(not is_subtype(t, target) for t in effects.possible_types.get(path, [])):
            run.emit(
                "schema_safety",
                "promoted value's type does not fit the enclosing state; widen the enclosing "
                "type or write a compatible value",
                promoted_loc,
            )
        if rule is Rule.MAP and not isinstance(local, ArrayType):
            continue
        if not _defined(effects, path, rule, group_state, overrides):
            run.emit("undefined_read", _UNDEFINED[rule], promoted_loc)
    effects.keep_promoted({tuple(path) for path in promoted})


def _defined(
    effects: Effects,
    path: FieldPath,
    rule: Rule,
    group_state: PayloadType,
    overrides: Mapping[FieldPath, PayloadType] | None,
) -> bool:
    written = any(path in fact.guaranteed for fact in effects.definite_writes.values())
    if rule is Rule.MAP:
        return written or any(
            path in fact.guaranteed
            for writes in effects.outcome_writes.values()
            for fact in writes.values()
        )
    indexed = overrides is not None and path in overrides
    return written or (not indexed and is_required_path(group_state, path))
