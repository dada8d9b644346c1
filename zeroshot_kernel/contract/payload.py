"""The closed payload type algebra: types, subtyping and runtime value checks.

The algebra is deliberately small (primitives, records, arrays, enums) so that every
question about it (is S a subtype of T? does this value fit?) is decidable and cheap.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.reading import MAX_VIOLATIONS, shorten
from zeroshot_kernel.contract.values import MAX_COLLECTION_ITEMS, EnumSet, FieldName


class NullType(ContractModel):
    kind: Literal["null"]


class BooleanType(ContractModel):
    kind: Literal["boolean"]


class IntegerType(ContractModel):
    kind: Literal["integer"]


class NumberType(ContractModel):
    kind: Literal["number"]


class StringType(ContractModel):
    kind: Literal["string"]


class RecordField(ContractModel):
    type: PayloadType
    required: bool


class RecordType(ContractModel):
    kind: Literal["record"]
    fields: Annotated[dict[FieldName, RecordField], Field(max_length=MAX_COLLECTION_ITEMS)]


class ArrayType(ContractModel):
    kind: Literal["array"]
    items: PayloadType


class EnumType(ContractModel):
    kind: Literal["enum"]
    values: EnumSet


PayloadType = Annotated[
    NullType
    | BooleanType
    | IntegerType
    | NumberType
    | StringType
    | RecordType
    | ArrayType
    | EnumType,
    Field(discriminator="kind"),
]

RecordField.model_rebuild()
RecordType.model_rebuild()
ArrayType.model_rebuild()

PRIMITIVE_KINDS = frozenset({"null", "boolean", "integer", "number", "string"})


def is_subtype(source: PayloadType, target: PayloadType) -> bool:
    """Whether every value of ``source`` is a value of ``target``.

    >>> is_subtype(IntegerType(kind="integer"), NumberType(kind="number"))
    True
    """
    if isinstance(source, RecordType) and isinstance(target, RecordType):
        for name, wanted in target.fields.items():
            have = source.fields.get(name)
            if have is None:
                if wanted.required:
                    return False
            elif (wanted.required and not have.required) or not is_subtype(have.type, wanted.type):
                return False
        return True
    if isinstance(source, ArrayType) and isinstance(target, ArrayType):
        return is_subtype(source.items, target.items)
    if isinstance(source, EnumType) and isinstance(target, EnumType):
        return set(source.values) <= set(target.values)
    if source.kind == "integer" and target.kind == "number":
        return True
    return source.kind in PRIMITIVE_KINDS and source.kind == target.kind


ValuePath = tuple[str | int, ...]


class ValueViolation(ContractModel):
    """One reason a value does not fit a type, with the path to the offending part."""

    path: list[str | int]
    message: str

    def describe(self) -> str:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{shorten(p)}" for p in self.path)
        return f"{where.lstrip('.') or '(value)'}: {self.message}"


def check_value(
    value: Any, payload_type: PayloadType, *, limit: int = MAX_VIOLATIONS
) -> list[ValueViolation]:
    """The first ``limit`` ways ``value`` fails ``payload_type``; empty when it fits.

    >>> check_value({"n": 1.5}, RecordType(kind="record", fields={
    ...     "n": RecordField(type=IntegerType(kind="integer"), required=True)}))[0].message
    'expected an integer without a fraction, got 1.5'
    """
    if fits(value, payload_type):
        return []
    return list(itertools.islice(iter_violations(value, payload_type), limit))


def fits(value: Any, payload_type: PayloadType) -> bool:
    """Whether ``value`` fits ``payload_type`` (exactly when :func:`iter_violations` finds
    nothing), without building reasons: the engine checks payloads on every reduction,
    and nearly all of them fit. Each type is compiled once into nested checks."""
    return _checker(payload_type)(value)


Check = Callable[[Any], bool]
_MAX_CHECKERS = 4096
_checkers: dict[int, tuple[PayloadType, Check]] = {}
"""Compiled checks by the identity of their type (kept alive here, so an id is never
reused while it is known; types are immutable)."""


def _checker(payload_type: PayloadType) -> Check:
    known = _checkers.get(id(payload_type))
    if known is not None and known[0] is payload_type:
        return known[1]
    check = _compile(payload_type)
    if len(_checkers) >= _MAX_CHECKERS:
        _checkers.clear()
    _checkers[id(payload_type)] = (payload_type, check)
    return check


def _compile(t: PayloadType) -> Check:
    """The check for ``t``, case by case as :func:`_violations` decides."""
    if isinstance(t, NullType):
        return lambda value: value is None
    if isinstance(t, BooleanType):
        return lambda value: isinstance(value, bool)
    if isinstance(t, IntegerType):
        return _fits_integer
    if isinstance(t, NumberType):
        return _fits_number
    if isinstance(t, StringType):
        return lambda value: isinstance(value, str)
    if isinstance(t, EnumType):
        values = t.values
        return lambda value: isinstance(value, str) and value in values
    if isinstance(t, ArrayType):
        items = _compile(t.items)
        return lambda value: isinstance(value, list) and all(map(items, value))
    if isinstance(t, RecordType):
        return _record_check(t)
    return lambda value: next(_violations(value, t, ()), None) is None


def _record_check(t: RecordType) -> Check:
    fields = [(name, field.required, _compile(field.type)) for name, field in t.fields.items()]
    names = frozenset(t.fields)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        for name, required, fits_field in fields:
            if name in value:
                if not fits_field(value[name]):
                    return False
            elif required:
                return False
        return names.issuperset(value)

    return check


def _fits_integer(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not isinstance(value, float) or (math.isfinite(value) and value == int(value))


def _fits_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not isinstance(value, float) or math.isfinite(value)


def iter_violations(value: Any, payload_type: PayloadType) -> Iterator[ValueViolation]:
    """Every way ``value`` fails ``payload_type``, lazily (count them without keeping them)."""
    for path, message in _violations(value, payload_type, ()):
        yield ValueViolation(path=list(path), message=message)


def _violations(value: Any, t: PayloadType, path: ValuePath) -> Iterator[tuple[ValuePath, str]]:
    match t:
        case NullType():
            if value is not None:
                yield path, f"expected null, got {_describe(value)}"
        case BooleanType():
            if not isinstance(value, bool):
                yield path, f"expected a boolean, got {_describe(value)}"
        case IntegerType():
            if isinstance(value, bool) or not isinstance(value, int | float):
                yield path, f"expected an integer, got {_describe(value)}"
            elif isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
                yield path, f"expected an integer without a fraction, got {value!r}"
        case NumberType():
            if isinstance(value, bool) or not isinstance(value, int | float):
                yield path, f"expected a number, got {_describe(value)}"
            elif isinstance(value, float) and not math.isfinite(value):
                yield path, f"expected a finite number, got {value!r}"
        case StringType():
            if not isinstance(value, str):
                yield path, f"expected a string, got {_describe(value)}"
        case EnumType():
            if not isinstance(value, str) or value not in t.values:
                yield path, f"expected one of {', '.join(t.values)}, got {_describe(value)}"
        case ArrayType():
            if not isinstance(value, list):
                yield path, f"expected an array, got {_describe(value)}"
            else:
                for index, item in enumerate(value):
                    yield from _violations(item, t.items, (*path, index))
        case RecordType():
            if not isinstance(value, dict):
                yield path, f"expected a record, got {_describe(value)}"
                return
            for name, declared in t.fields.items():
                if name in value:
                    yield from _violations(value[name], declared.type, (*path, name))
                elif declared.required:
                    yield (*path, name), "required field is missing"
            for name in value:
                if name not in t.fields:
                    yield (*path, name), "unknown field"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a record"
    return type(value).__name__
