"""Diagnostics as data: what is wrong with a graph, where, and which nodes are involved."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Literal

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.reading import shorten

DiagnosticCode = Literal[
    "schema_safety",
    "reachability",
    "choice_exhaustiveness",
    "loop_exit_satisfiability",
    "missing_bound",
    "write_conflict",
    "ceiling_exceeded",
    "cyclic_reference",
    "undefined_read",
    "invalid_graph_shape",
]
CODE_RANK: dict[str, int] = {code: rank for rank, code in enumerate(DiagnosticCode.__args__)}  # type: ignore[attr-defined]
Severity = Literal["error", "warning", "info"]


class FieldSegment(ContractModel):
    kind: Literal["field"]
    name: str


class IndexSegment(ContractModel):
    kind: Literal["index"]
    index: Annotated[int, Field(ge=0, le=2**32 - 1)]


class NodeSegment(ContractModel):
    kind: Literal["node"]
    name: str


PathSegment = Annotated[FieldSegment | IndexSegment | NodeSegment, Field(discriminator="kind")]
_SEGMENT_RANK = {"field": 0, "index": 1, "node": 2}


def field(name: str) -> FieldSegment:
    return FieldSegment(kind="field", name=name)


def index(position: int) -> IndexSegment:
    return IndexSegment(kind="index", index=position)


def node(name: str) -> NodeSegment:
    return NodeSegment(kind="node", name=name)


class GraphDiagnostic(ContractModel):
    """One finding. ``path`` walks from the document root to the offending field."""

    severity: Severity = "error"
    code: DiagnosticCode
    message: str
    path: list[PathSegment]
    related_nodes: list[str] = Field(default_factory=list)

    def readable_path(self) -> str:
        """``root › children[0] › work › inputBindings[0] › value``."""
        return format_path(self.path)


def format_path(path: Sequence[FieldSegment | IndexSegment | NodeSegment]) -> str:
    """Each name cut to :data:`~zeroshot_kernel.contract.reading.MAX_SHOWN_CHARS` (a path is
    for reading, and a field name can be as long as the document)."""
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, IndexSegment):
            if parts:
                parts[-1] += f"[{segment.index}]"
            else:
                parts.append(f"[{segment.index}]")
        elif isinstance(segment, NodeSegment) and parts and parts[-1] == segment.name:
            continue  # `root › root` reads as one step
        else:
            parts.append(shorten(segment.name))
    return " › ".join(parts) if parts else "(document)"


def _segment_key(segment: FieldSegment | IndexSegment | NodeSegment) -> tuple[int, int, str]:
    if isinstance(segment, IndexSegment):
        return (1, segment.index, "")
    return (_SEGMENT_RANK[segment.kind], 0, segment.name)


def sort_key(diagnostic: GraphDiagnostic) -> tuple[object, ...]:
    """Path segment by segment (a prefix first), then code rank, message, related nodes."""
    return (
        [_segment_key(s) for s in diagnostic.path],
        CODE_RANK[diagnostic.code],
        diagnostic.message,
        list(diagnostic.related_nodes),
    )


def sorted_diagnostics(diagnostics: Iterable[GraphDiagnostic]) -> list[GraphDiagnostic]:
    return sorted(diagnostics, key=sort_key)
