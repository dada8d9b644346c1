"""Constrained scalar values of the graph contract: names, references, paths, bounds.

Each is an ``Annotated`` type so that models declare fields with the contract's own
vocabulary and pydantic enforces the limits on parse.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

MAX_IDENTIFIER_LENGTH = 128
MAX_REFERENCE_LENGTH = 256
MAX_PATH_SEGMENTS = 64
MAX_COLLECTION_ITEMS = 4096
MAX_SAFE_INTEGER = 2**53 - 1
MAX_INSTRUCTIONS_BYTES = 16_384

IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]*$"
REFERENCE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]*@[1-9][0-9]*$"
_REFERENCE = re.compile(REFERENCE_PATTERN)

Identifier = Annotated[
    str,
    Field(min_length=1, max_length=MAX_IDENTIFIER_LENGTH, pattern=IDENTIFIER_PATTERN),
]
NodeName = Identifier
FieldName = Identifier
EnumLabel = Identifier


def _check_reference(value: str) -> str:
    if len(value) > MAX_REFERENCE_LENGTH or not _REFERENCE.match(value):
        raise ValueError(
            "a reference must look like name@version with a positive version, for example "
            "'worker.reviewer@1'"
        )
    return value


StableRef = Annotated[
    str,
    Field(json_schema_extra={"pattern": REFERENCE_PATTERN, "maxLength": MAX_REFERENCE_LENGTH}),
    AfterValidator(_check_reference),
]
WorkerRef = StableRef
PolicyRef = StableRef

FieldPath = Annotated[list[FieldName], Field(min_length=1, max_length=MAX_PATH_SEGMENTS)]


def _integral(minimum: int) -> Any:
    """Accept JSON integers (and integral floats, as the reference does); never booleans."""

    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("expected an integer, got a boolean")
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise ValueError("expected a whole number")
            value = int(value)
        if isinstance(value, int) and not minimum <= value <= MAX_SAFE_INTEGER:
            raise ValueError(f"must be between {minimum} and {MAX_SAFE_INTEGER}")
        return value

    return BeforeValidator(check)


PositiveInteger = Annotated[int, _integral(1), Field(ge=1, le=MAX_SAFE_INTEGER)]
NonNegativeInteger = Annotated[int, _integral(0), Field(ge=0, le=MAX_SAFE_INTEGER)]


def _check_enum_set(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        duplicates = sorted({v for v in values if values.count(v) > 1})
        raise ValueError(f"labels must be unique; repeated: {', '.join(duplicates)}")
    return sorted(values)


EnumSet = Annotated[
    list[EnumLabel],
    Field(min_length=1, max_length=MAX_COLLECTION_ITEMS, json_schema_extra={"uniqueItems": True}),
    AfterValidator(_check_enum_set),
]
"""A non-empty set of labels, written as a list; sorted on parse, duplicates rejected."""


def _check_instructions(value: str) -> str:
    if not value.strip():
        raise ValueError("instructions must contain a non-whitespace character")
    if "\0" in value:
        raise ValueError("instructions must not contain NUL")
    if len(value.encode("utf-8")) > MAX_INSTRUCTIONS_BYTES:
        raise ValueError(f"instructions exceed {MAX_INSTRUCTIONS_BYTES} UTF-8 bytes")
    return value


Instructions = Annotated[
    str,
    Field(min_length=1, max_length=MAX_INSTRUCTIONS_BYTES),
    AfterValidator(_check_instructions),
]
