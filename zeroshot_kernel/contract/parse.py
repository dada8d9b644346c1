"""Turning documents into contract models, and every failure into located diagnostics.

Parsing never raises on bad content: a caller gets either the model or a list of
``GraphDiagnostic`` whose paths use the same field/index/node segments as the verifier.
Reading the document first is :mod:`zeroshot_kernel.contract.reading`'s job.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from zeroshot_kernel.contract.diagnostics import (
    FieldSegment,
    GraphDiagnostic,
    IndexSegment,
    NodeSegment,
    sorted_diagnostics,
)
from zeroshot_kernel.contract.diagnostics import (
    field as field_segment,
)
from zeroshot_kernel.contract.diagnostics import (
    index as index_segment,
)
from zeroshot_kernel.contract.diagnostics import (
    node as node_segment,
)
from zeroshot_kernel.contract.graph import CompiledGraphIr, GraphSpec
from zeroshot_kernel.contract.reading import MAX_SHAPE_DIAGNOSTICS

Segment = FieldSegment | IndexSegment | NodeSegment
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ParseResult(Generic[M]):
    """Either a parsed model or the diagnostics explaining why there is none."""

    value: M | None
    diagnostics: list[GraphDiagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.value is not None


def parse_graph(document: Any) -> ParseResult[GraphSpec]:
    """Parse a GraphSpec document (a dict as loaded from JSON).

    >>> [d.readable_path() for d in parse_graph({"profile": "nope"}).diagnostics]
    ['(document)', '(document)', '(document)', 'profile']
    """
    return parse_model(GraphSpec, document)


def parse_compiled_ir(document: Any) -> ParseResult[CompiledGraphIr]:
    return parse_model(CompiledGraphIr, document)


def parse_model(model: type[M], document: Any) -> ParseResult[M]:
    try:
        return ParseResult(model.model_validate(document))
    except ValidationError as error:
        return ParseResult(None, diagnostics_from_validation(error, document))
    except RecursionError:
        return ParseResult(
            None,
            [
                GraphDiagnostic(
                    code="invalid_graph_shape",
                    message=(
                        "the document is nested too deeply to be a graph (the depth ceiling is 64)"
                    ),
                    path=[],
                )
            ],
        )


def diagnostics_from_validation(error: ValidationError, document: Any) -> list[GraphDiagnostic]:
    """One diagnostic per distinct location, with paths resolved against ``document``."""
    seen: set[tuple[object, ...]] = set()
    diagnostics = []
    details = error.errors(include_url=False)
    if len(details) > MAX_SHAPE_DIAGNOSTICS:
        diagnostics.append(
            GraphDiagnostic(
                code="invalid_graph_shape",
                path=[],
                message=f"{len(details) - MAX_SHAPE_DIAGNOSTICS} more shape problems "
                f"(only the first {MAX_SHAPE_DIAGNOSTICS} are listed)",
            )
        )
    for detail in details[:MAX_SHAPE_DIAGNOSTICS]:
        path = document_path(document, detail["loc"])
        message = _humanize(detail)
        key = (tuple(s.model_dump_json() for s in path), message)
        if key in seen:
            continue
        seen.add(key)
        diagnostics.append(GraphDiagnostic(code="invalid_graph_shape", message=message, path=path))
    return sorted_diagnostics(diagnostics)


# --- locations ----------------------------------------------------------------------------

_Context = Literal["document", "node", "node_list", "branch_list", "branch", "other"]


def document_path(document: Any, loc: Sequence[int | str]) -> list[Segment]:
    """Map a pydantic location onto field/index/node segments of the raw document.

    Pydantic locations also carry union tags and key markers that are not part of the
    document; walking the raw document alongside tells the two apart.
    """
    path: list[Segment] = []
    current = document
    context: _Context = "document"
    for element in loc:
        if isinstance(current, dict) and isinstance(element, str) and element in current:
            path.append(field_segment(element))
            context = _child_context(context, current, element)
            current = current[element]
        elif isinstance(current, list) and isinstance(element, int) and 0 <= element < len(current):
            path.append(index_segment(element))
            context = {"node_list": "node", "branch_list": "branch"}.get(context, "other")  # type: ignore[assignment]
            current = current[element]
        else:
            continue  # a union tag, a '[key]' marker or a validator name
        if context == "node" and isinstance(current, dict) and isinstance(current.get("name"), str):
            path.append(node_segment(current["name"]))
    return path


def _child_context(context: _Context, parent: dict[str, Any], key: str) -> _Context:
    if context == "document":
        return "node" if key == "root" else "other"
    if context == "branch":
        return "node" if key == "node" else "other"
    if context != "node":
        return "other"
    kind = parent.get("kind")
    if key == "children" and kind == "seq":
        return "node_list"
    if key == "branches":
        lists: dict[Any, _Context] = {"choice": "branch_list", "par": "node_list"}
        return lists.get(kind, "other")
    if (key == "otherwise" and kind == "choice") or (key == "body" and kind in ("loop", "map")):
        return "node"
    return "other"


# --- messages -----------------------------------------------------------------------------

_FORBIDDEN_WORKER_FIELDS = {"command", "endpoint", "credential", "credentials", "url", "env"}
_EXECUTABLE_GUARD_FIELDS = {"script", "regex", "expression", "code"}


def _humanize(detail: ErrorDetails) -> str:
    kind = detail["type"]
    loc = [e for e in detail["loc"] if isinstance(e, str)]
    last = loc[-1] if loc else ""
    if len(last) > 60:
        last = last[:57] + "..."
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    value = detail.get("input")
    if kind == "extra_forbidden":
        if last in _FORBIDDEN_WORKER_FIELDS:
            return (
                f"field '{last}' is not allowed: a graph names its worker by reference only; "
                "commands, endpoints and credentials belong to the runtime plan"
            )
        if last in _EXECUTABLE_GUARD_FIELDS:
            return (
                f"field '{last}' is not allowed: the contract has no scripts or patterns; "
                "use structured guards over control labels and closed payload types"
            )
        return f"unknown field '{last}'; remove it or check its spelling"
    if kind == "recursion_depth_exceeded":
        return "the document is nested too deeply to be a graph (the depth ceiling is 64)"
    if kind == "missing":
        return f"required field '{last}' is missing"
    if kind == "union_tag_invalid":
        expected = ctx.get("expected_tags", "")
        discriminator = str(ctx.get("discriminator", "kind")).strip("'")
        return f"unknown {discriminator} '{ctx.get('tag')}'; expected one of {expected}"
    if kind == "union_tag_not_found":
        return f"an object here needs a {ctx.get('discriminator', 'kind')} field"
    if kind in ("model_attributes_type", "model_type", "dict_type") and isinstance(value, str):
        return (
            "expected an object, got the string "
            f"{value[:60]!r}: selectors and types are structured objects, never strings"
        )
    if kind == "literal_error":
        return f"{_show(value)} is not allowed here; expected {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        return (
            f"{_show(value)} is not a valid name: start with a letter or '_', then use letters, "
            "digits, '_', '.' or '-'"
        )
    if kind == "string_too_long":
        return f"{_show(value)} is longer than {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"has more than {ctx.get('max_length')} items"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{_show(value)} is out of range: {detail['msg'].lower()}"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", detail["msg"]))
    return f"{detail['msg']} (got {_show(value)})"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if _jsonable(value) else reprlib.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True
