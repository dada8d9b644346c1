"""The contract's limits, each checked just inside and just past its bound through
``parse_graph``: inside parses, past it is one diagnostic at the offending field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from zeroshot_kernel.contract.parse import parse_graph
from zeroshot_kernel.contract.values import (
    MAX_COLLECTION_ITEMS,
    MAX_IDENTIFIER_LENGTH,
    MAX_INSTRUCTIONS_BYTES,
    MAX_PATH_SEGMENTS,
    MAX_REFERENCE_LENGTH,
    MAX_SAFE_INTEGER,
)

STEP: dict[str, Any] = {
    "kind": "step",
    "name": "work",
    "worker": "worker.work@1",
    "input": {"kind": "null"},
    "output": {"kind": "null"},
    "inputBindings": [],
    "writeBindings": [],
    "timeoutMs": 60_000,
    "attempts": 1,
}
GRAPH: dict[str, Any] = {
    "profile": "openengine.graph.single-worker/v1",
    "initialInput": {"kind": "null"},
    "policy": {"policy": "policy.default@1", "default": "deny"},
    "root": STEP,
}

Edit = Callable[[dict[str, Any]], None]


def with_root(**fields: Any) -> Edit:
    def edit(graph: dict[str, Any]) -> None:
        graph["root"].update(fields)

    return edit


def with_enum(count: int) -> Edit:
    def edit(graph: dict[str, Any]) -> None:
        graph["initialInput"] = {"kind": "enum", "values": [f"v{i}" for i in range(count)]}

    return edit


def with_target_path(segments: int) -> Edit:
    def edit(graph: dict[str, Any]) -> None:
        graph["root"]["inputBindings"] = [
            {"target": ["f"] * segments, "value": {"source": "state", "path": ["x"]}}
        ]

    return edit


def reference(length: int) -> str:
    return "w" * (length - len("@1")) + "@1"


def problems(edit: Edit) -> list[str]:
    graph = copy.deepcopy(GRAPH)
    edit(graph)
    return [d.readable_path() for d in parse_graph(graph).diagnostics]


INSIDE = {
    "name": with_root(name="n" * MAX_IDENTIFIER_LENGTH),
    "worker reference": with_root(worker=reference(MAX_REFERENCE_LENGTH)),
    "instructions": with_root(instructions="i" * MAX_INSTRUCTIONS_BYTES),
    "path segments": with_target_path(MAX_PATH_SEGMENTS),
    "enum labels": with_enum(MAX_COLLECTION_ITEMS),
    "integer": with_root(timeoutMs=MAX_SAFE_INTEGER),
    "integral float": with_root(attempts=3.0),
}

PAST = {
    "name": (
        with_root(name="n" * (MAX_IDENTIFIER_LENGTH + 1)),
        "root › " + "n" * (MAX_IDENTIFIER_LENGTH + 1) + " › name",
    ),
    "worker reference": (
        with_root(worker=reference(MAX_REFERENCE_LENGTH + 1)),
        "root › work › worker",
    ),
    "worker version zero": (with_root(worker="worker.work@0"), "root › work › worker"),
    "instructions": (
        with_root(instructions="i" * (MAX_INSTRUCTIONS_BYTES + 1)),
        "root › work › instructions",
    ),
    "instructions counted in bytes": (
        with_root(instructions="\u20ac" * (MAX_INSTRUCTIONS_BYTES // 3 + 1)),
        "root › work › instructions",
    ),
    "blank instructions": (with_root(instructions=" \n\t"), "root › work › instructions"),
    "instructions with NUL": (with_root(instructions="do\0this"), "root › work › instructions"),
    "path segments": (
        with_target_path(MAX_PATH_SEGMENTS + 1),
        "root › work › inputBindings[0] › target",
    ),
    "empty path": (with_target_path(0), "root › work › inputBindings[0] › target"),
    "enum labels": (with_enum(MAX_COLLECTION_ITEMS + 1), "initialInput › values"),
    "integer": (with_root(timeoutMs=MAX_SAFE_INTEGER + 1), "root › work › timeoutMs"),
    "fractional integer": (with_root(attempts=1.5), "root › work › attempts"),
    "boolean integer": (with_root(attempts=True), "root › work › attempts"),
    "zero attempts": (with_root(attempts=0), "root › work › attempts"),
}


@pytest.mark.parametrize("name", sorted(INSIDE))
def test_a_value_at_its_limit_parses(name: str) -> None:
    assert problems(INSIDE[name]) == []


@pytest.mark.parametrize("name", sorted(PAST))
def test_a_value_past_its_limit_is_one_diagnostic_at_its_field(name: str) -> None:
    edit, path = PAST[name]
    assert problems(edit) == [path]
