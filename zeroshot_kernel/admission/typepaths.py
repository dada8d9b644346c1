"""Field paths into payload types: what a path selects, whether it is always present, and
which paths a write makes definitely defined.

Paths are tuples of field names; they order like the reference's (segment by segment),
which matters wherever writes are applied one after another.
"""

from __future__ import annotations

from collections.abc import Mapping

from zeroshot_kernel.contract.payload import PayloadType, RecordType, is_subtype

FieldPath = tuple[str, ...]
Definitions = dict[FieldPath, PayloadType]
"""Paths known to hold a value at some point of the flow, with the type they hold there."""


def path_type(payload: PayloadType, path: FieldPath) -> PayloadType | None:
    """The type at ``path``, or ``None`` when the path leaves the records of ``payload``."""
    current = payload
    for name in path:
        if not isinstance(current, RecordType) or name not in current.fields:
            return None
        current = current.fields[name].type
    return current


def is_required_path(payload: PayloadType, path: FieldPath) -> bool:
    """Whether every value of ``payload`` has ``path`` (each field on the way is required)."""
    current = payload
    for name in path:
        if not isinstance(current, RecordType) or name not in current.fields:
            return False
        declared = current.fields[name]
        if not declared.required:
            return False
        current = declared.type
    return True


def required_leaf_paths(payload: PayloadType) -> list[FieldPath]:
    """The paths a binding set must cover to build a value of ``payload``: required leaves,
    where a required record without required fields is itself a leaf."""
    leaves: list[FieldPath] = []

    def collect(current: PayloadType, prefix: FieldPath) -> bool:
        if not isinstance(current, RecordType):
            if prefix:
                leaves.append(prefix)
            return bool(prefix)
        found = False
        for name in sorted(current.fields):
            declared = current.fields[name]
            if declared.required:
                found |= collect(declared.type, (*prefix, name))
        if not found and prefix:
            leaves.append(prefix)
            return True
        return found

    collect(payload, ())
    return leaves


def required_descendants(payload: PayloadType, prefix: FieldPath = ()) -> Definitions:
    """Every path below ``prefix`` that a value of ``payload`` always has, with its type."""
    found: Definitions = {}
    if isinstance(payload, RecordType):
        for name in sorted(payload.fields):
            declared = payload.fields[name]
            if declared.required:
                path = (*prefix, name)
                found[path] = declared.type
                found.update(required_descendants(declared.type, path))
    return found


def guaranteed_paths(target: FieldPath, value_type: PayloadType, present: bool) -> Definitions:
    """What writing a value of ``value_type`` at ``target`` defines; nothing when the source
    may be absent."""
    if not present:
        return {}
    return {target: value_type, **required_descendants(value_type, target)}


def fits_with_definitions(
    source: PayloadType, target: PayloadType, definitions: Mapping[FieldPath, PayloadType]
) -> bool:
    """``source <: target``, where the flow's definitions refine optional or wider fields of
    ``source`` (a group may require a field that an earlier write has defined)."""

    def check(current: PayloadType, wanted: PayloadType, prefix: FieldPath) -> bool:
        if not (isinstance(current, RecordType) and isinstance(wanted, RecordType)):
            return is_subtype(current, wanted)
        for name, wanted_field in wanted.fields.items():
            have = current.fields.get(name)
            if have is None:
                if wanted_field.required:
                    return False
                continue
            path = (*prefix, name)
            refined = definitions.get(path)
            present = have.required or refined is not None
            if wanted_field.required and not present:
                return False
            if not check(refined if refined is not None else have.type, wanted_field.type, path):
                return False
        return True

    return check(source, target, ())


def common_supertype(left: PayloadType, right: PayloadType) -> PayloadType | None:
    """The wider of two comparable types; ``None`` when neither contains the other."""
    if is_subtype(left, right):
        return right
    if is_subtype(right, left):
        return left
    return None


def comparable(left: PayloadType, right: PayloadType) -> bool:
    return is_subtype(left, right) or is_subtype(right, left)


def is_prefix(prefix: FieldPath, path: FieldPath) -> bool:
    return path[: len(prefix)] == prefix


def overlaps(left: FieldPath, right: FieldPath) -> bool:
    """Whether writing one path can change the other (one contains the other)."""
    return is_prefix(left, right) or is_prefix(right, left)


def dotted(path: FieldPath) -> str:
    return ".".join(path)
