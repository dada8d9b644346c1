"""Moving values along declared paths: building inputs, applying writes, promoting state.

Bindings never copy a whole payload (paths have at least one segment), so every target is a
field of a record; values are JSON-shaped and updated by copying along the path, never in
place, so a clone of a context can share its state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from zeroshot_kernel.contract.graph import (
    DataSelector,
    InputBinding,
    ItemSelector,
    NodeOutputSelector,
)
from zeroshot_kernel.engine.decisions import PromotedValue
from zeroshot_kernel.engine.reducer_errors import ReducerError
from zeroshot_kernel.engine.traversal import MapItem
from zeroshot_kernel.engine.walk_context import Channels, Context, Path

_ABSENT = object()
"""What :func:`_lookup` returns for an undefined path (``None`` is a value: JSON null)."""


def _lookup(value: Any, path: Sequence[str]) -> Any:
    """The value at ``path``, or ``_ABSENT`` when any segment is missing."""
    for segment in path:
        if not isinstance(value, dict) or segment not in value:
            return _ABSENT
        value = value[segment]
    return value


def select(value: Any, path: Sequence[str], what: str) -> Any:
    """The value at ``path``; admission proved it defined, so a miss is a reducer error."""
    found = _lookup(value, path)
    if found is _ABSENT:
        raise ReducerError(f"{what}: nothing at path {'.'.join(path)}")
    return found


def with_path(value: Any, path: Sequence[str], new: Any) -> Any:
    """A copy of record ``value`` with ``new`` at ``path`` (missing records are created)."""
    if value is None or value is _ABSENT:
        value = {}
    if not isinstance(value, dict):
        raise ReducerError(f"cannot write {'.'.join(path)} into a non-record value")
    head, *rest = path
    return {**value, head: with_path(value.get(head, _ABSENT), rest, new) if rest else new}


def without_path(value: Any, path: Sequence[str]) -> Any:
    """A copy of ``value`` with ``path`` undefined (unchanged when it already is)."""
    if not isinstance(value, dict) or path[0] not in value:
        return value
    head, *rest = path
    if not rest:
        return {key: item for key, item in value.items() if key != head}
    return {**value, head: without_path(value[head], rest)}


def select_data(selector: DataSelector, state: Any, item: MapItem | None) -> Any:
    """Read state, or the current map item (admission allows ``item`` only inside a map)."""
    if isinstance(selector, ItemSelector):
        if item is None:
            raise ReducerError("an item selector was read outside a map")
        return select(item.value, selector.path, "map item")
    return select(state, selector.path, "state")


def build_payload(bindings: Sequence[InputBinding], state: Any, item: MapItem | None) -> Any:
    """An input (or a succeed output) from its bindings; null when there are none."""
    if not bindings:
        return None
    payload: Any = {}
    for binding in bindings:
        payload = with_path(payload, binding.target, select_data(binding.value, state, item))
    return payload


def channel_value(channels: Channels, selector: NodeOutputSelector) -> Any:
    """What a write binding reads from an executable's outcome."""
    what = f"{selector.channel} of {selector.node}"
    if selector.channel == "out":
        return select(channels.out, selector.path, what)
    if selector.channel == "diagnostic":
        return select(channels.diagnostic, selector.path, what)
    label = channels.signals.get(selector.path[0])
    if label is None:
        raise ReducerError(f"{what}: no signal {selector.path[0]}")
    return label


def written_under(written: Iterable[Path], promoted: Iterable[Path]) -> set[Path]:
    """The parts of ``promoted`` that ``written`` actually touched, as the coarsest paths:
    a write below a promoted path counts as itself, a write above it as the promoted path."""
    touched: set[Path] = set()
    for path in promoted:
        for write in written:
            if write[: len(path)] == path:
                touched.add(write)
            elif path[: len(write)] == write:
                touched.add(path)
    return {
        path
        for path in touched
        if not any(other != path and path[: len(other)] == other for other in touched)
    }


def promote(local: Context, parent: Context, paths: Sequence[Path]) -> tuple[PromotedValue, ...]:
    """Copy ``paths`` from a finished group's ``local`` context into ``parent`` (an undefined
    path becomes undefined in the parent too) and merge the group's facts. Returns the values
    that were copied."""
    values = []
    for path in paths:
        value = _lookup(local.state, path)
        if value is _ABSENT:
            parent.state = without_path(parent.state, path)
        else:
            parent.state = with_path(parent.state, path, value)
            values.append(PromotedValue(path, value))
    parent.written |= written_under(local.written, paths)
    parent.merge_facts(local)
    return tuple(values)
