"""Guard legality: every selector names a control its node has, is read only where the node
has definitely run, and every label a guard tests is one the control can report.

A guard that fails here is not enumerated: its routes are treated as undecidable, so one
mistake does not cascade into misleading exhaustiveness findings.
"""

from __future__ import annotations

from collections.abc import Sequence

from zeroshot_kernel.admission.controls import selector_domain, selector_uses
from zeroshot_kernel.admission.locations import Loc, at, item
from zeroshot_kernel.admission.verifier_state import VerifierState
from zeroshot_kernel.contract.diagnostics import DiagnosticCode
from zeroshot_kernel.contract.graph import (
    AllGuard,
    AnyGuard,
    ControlSelector,
    Guard,
    InGuard,
    KOfMapGuard,
    KOfNGuard,
    NotGuard,
)


def check_guard(
    run: VerifierState, guard: Guard, available: set[str], loc: Loc, code: DiagnosticCode
) -> bool:
    """Report what makes ``guard`` illegal at ``loc``; ``code`` is the finding's code for
    this kind of guard (choice, loop exit, first join). True when the guard is legal."""
    legal = True
    for selector, per_item in selector_uses(guard):
        owner = run.index.map_owner(selector.name) if per_item else None
        if selector.name not in available and (owner is None or owner not in available):
            run.emit(
                "undefined_read",
                f"guard reads {selector.name} where it has not definitely run; route on it "
                "only after it, or count it with k_of_map after its map",
                loc,
                [selector.name],
            )
            legal = False
        if _domain(run, selector) is None:
            run.emit(
                code,
                f"control selector on {selector.name} names no control that node reports; "
                "use a verifier's declared signal, an executable's error (field null), or "
                "a group outcome (loop terminated, map overflow, par joined or raced)",
                loc,
                [selector.name],
            )
            legal = False
    return _check_labels(run, guard, loc, code) and legal


def _domain(run: VerifierState, selector: ControlSelector) -> tuple[str, ...] | None:
    return selector_domain(run.index.nodes.get(selector.name), selector)


def _check_labels(run: VerifierState, guard: Guard, loc: Loc, code: DiagnosticCode) -> bool:
    if isinstance(guard, InGuard):
        return _labels_in_domain(run, guard.value, guard.labels, loc, code, "guard")
    if isinstance(guard, AllGuard | AnyGuard):
        legal = True
        for position, inner in enumerate(guard.guards):
            legal &= _check_labels(run, inner, item(loc, "guards", position), code)
        return legal
    if isinstance(guard, NotGuard):
        return _check_labels(run, guard.guard, at(loc, "guard"), code)
    if isinstance(guard, KOfNGuard):
        return _check_k_of_n(run, guard, loc, code)
    return _check_k_of_map(run, guard, loc, code)


def _labels_in_domain(
    run: VerifierState,
    selector: ControlSelector,
    labels: Sequence[str],
    loc: Loc,
    code: DiagnosticCode,
    guard_kind: str,
) -> bool:
    domain = _domain(run, selector)
    if domain is None or set(labels) <= set(domain):
        return True
    run.emit(
        code,
        f"{guard_kind} labels include labels {selector.name} never reports; keep only "
        f"labels of its closed domain ({', '.join(domain)})",
        at(loc, "labels"),
        [selector.name],
    )
    return False


def _check_k_of_n(run: VerifierState, guard: KOfNGuard, loc: Loc, code: DiagnosticCode) -> bool:
    legal = True
    if guard.count > len(guard.values):
        run.emit(
            code,
            f"k_of_n count {guard.count} is more than its {len(guard.values)} selectors; "
            "lower the count or add selectors",
            at(loc, "count"),
        )
        legal = False
    domains = [_domain(run, selector) for selector in guard.values]
    reported = {label for domain in domains if domain is not None for label in domain}
    if not set(guard.labels) <= reported:
        run.emit(
            code,
            "k_of_n labels include labels that none of its selectors reports; keep only "
            "labels of the selectors' closed domains",
            at(loc, "labels"),
            [selector.name for selector in guard.values],
        )
        legal = False
    for selector, domain in zip(guard.values, domains, strict=True):
        if domain is not None and set(guard.labels).isdisjoint(domain):
            run.emit(
                code,
                f"k_of_n labels contain no label {selector.name} reports, so it can never "
                "count; add one of its labels or drop the selector",
                at(loc, "labels"),
                [selector.name],
            )
            legal = False
    return legal


def _check_k_of_map(run: VerifierState, guard: KOfMapGuard, loc: Loc, code: DiagnosticCode) -> bool:
    legal = True
    scope = run.index.map_scope(guard.value.name)
    if scope is None:
        run.emit(
            code,
            f"k_of_map reads {guard.value.name}, which does not run inside a map; count "
            "a node of a map body, or use an in guard",
            at(loc, "value"),
            [guard.value.name],
        )
        legal = False
    elif guard.count > scope.max_items:
        run.emit(
            code,
            f"k_of_map count {guard.count} exceeds maxItems {scope.max_items} of map "
            f"{scope.owner}, so it can never hold; lower the count",
            at(loc, "count"),
            [guard.value.name],
        )
        legal = False
    return _labels_in_domain(run, guard.value, guard.labels, loc, code, "k_of_map") and legal
