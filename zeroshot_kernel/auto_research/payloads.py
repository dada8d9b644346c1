"""The research payloads as graph contract types, derived from the pydantic models.

The auto-research template declares its change, evidence and result with these instead of
spelling them out by hand, so the declared types cannot drift from what the nodes emit.
Fields with a default are optional (they may be omitted); ``paramsJson`` is text.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from zeroshot_kernel.auto_research.protocol import (
    Change,
    Evidence,
    ResearcherInput,
    ResearchResult,
    ReviewerInput,
    ReviewVerdict,
    ScoutInput,
    ScoutProposal,
)
from zeroshot_kernel.auto_research.task import Params
from zeroshot_kernel.contract.payload import (
    ArrayType,
    BooleanType,
    EnumType,
    IntegerType,
    NumberType,
    PayloadType,
    RecordField,
    RecordType,
    StringType,
)

MODELS: tuple[type[BaseModel], ...] = (
    ScoutInput,
    ScoutProposal,
    ResearcherInput,
    Change,
    Evidence,
    ResearchResult,
    ReviewerInput,
    ReviewVerdict,
)
_PRIMITIVES: dict[Any, PayloadType] = {
    str: StringType(kind="string"),
    bool: BooleanType(kind="boolean"),
    int: IntegerType(kind="integer"),
    float: NumberType(kind="number"),
    Params: StringType(kind="string"),  # parameters travel as JSON text
}


def payload_types() -> dict[str, RecordType]:
    """The contract record type of each research payload, by model name."""
    return {model.__name__: record_type(model) for model in MODELS}


def record_type(model: type[BaseModel]) -> RecordType:
    fields = {}
    for name, info in model.model_fields.items():
        fields[info.alias or name] = RecordField(
            type=_type(info.annotation), required=info.is_required()
        )
    return RecordType(kind="record", fields=fields)


def _type(annotation: Any) -> PayloadType:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType) and annotation != Params:
        present = [a for a in get_args(annotation) if a is not type(None)]
        if len(present) != 1:
            raise TypeError(f"no contract type for the union {annotation}")
        return _type(present[0])
    if origin is Literal:
        return EnumType(kind="enum", values=[str(v) for v in get_args(annotation)])
    if origin is list:
        return ArrayType(kind="array", items=_type(get_args(annotation)[0]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return record_type(annotation)
    if annotation in _PRIMITIVES:
        return _PRIMITIVES[annotation]
    raise TypeError(f"no contract type for {annotation}")
