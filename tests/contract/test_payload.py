"""Subtyping and runtime value checks of the closed payload algebra."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import TypeAdapter

from zeroshot_kernel.contract.payload import PayloadType, check_value, is_subtype

_types = TypeAdapter(PayloadType)


def t(document: dict[str, Any]) -> PayloadType:
    return _types.validate_python(document)


INT = {"kind": "integer"}
NUM = {"kind": "number"}
STR = {"kind": "string"}


def record(**fields: tuple[dict[str, Any], bool]) -> dict[str, Any]:
    return {
        "kind": "record",
        "fields": {k: {"type": v, "required": r} for k, (v, r) in fields.items()},
    }


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        (INT, NUM, True),
        (NUM, INT, False),
        (STR, STR, True),
        ({"kind": "null"}, STR, False),
        ({"kind": "boolean"}, {"kind": "boolean"}, True),
        ({"kind": "array", "items": INT}, {"kind": "array", "items": NUM}, True),
        ({"kind": "array", "items": NUM}, {"kind": "array", "items": INT}, False),
        ({"kind": "enum", "values": ["a"]}, {"kind": "enum", "values": ["a", "b"]}, True),
        ({"kind": "enum", "values": ["a", "c"]}, {"kind": "enum", "values": ["a", "b"]}, False),
        ({"kind": "enum", "values": ["a"]}, STR, False),
        (record(a=(INT, True), extra=(STR, True)), record(a=(NUM, True)), True),
        (record(a=(INT, False)), record(a=(INT, True)), False),
        (record(), record(a=(INT, False)), True),
        (record(a=(STR, False)), record(a=(INT, False)), False),
        (record(), record(a=(INT, True)), False),
    ],
)
def test_subtyping(source: dict[str, Any], target: dict[str, Any], expected: bool) -> None:
    assert is_subtype(t(source), t(target)) is expected


def test_subtyping_is_reflexive_and_transitive_on_samples() -> None:
    samples = [INT, NUM, STR, record(a=(INT, True)), record(a=(NUM, False)), record()]
    types = [t(s) for s in samples]
    for a in types:
        assert is_subtype(a, a)
        for b in types:
            for c in types:
                if is_subtype(a, b) and is_subtype(b, c):
                    assert is_subtype(a, c)


@pytest.mark.parametrize(
    ("value", "payload", "paths"),
    [
        (3, INT, []),
        (3.0, INT, []),
        (3.5, INT, [[]]),
        (True, INT, [[]]),
        (math.inf, NUM, [[]]),
        (math.nan, NUM, [[]]),
        (2, NUM, []),
        ("x", {"kind": "enum", "values": ["x", "y"]}, []),
        ("z", {"kind": "enum", "values": ["x", "y"]}, [[]]),
        ([1, "a", 2], {"kind": "array", "items": INT}, [[1]]),
        ({"a": 1}, record(a=(INT, True), b=(STR, True)), [["b"]]),
        ({"a": 1, "zzz": 2}, record(a=(INT, True)), [["zzz"]]),
        ({"a": {"b": "no"}}, record(a=(record(b=(INT, True)), True)), [["a", "b"]]),
        (None, {"kind": "null"}, []),
        ({}, record(a=(INT, False)), []),
    ],
)
def test_check_value_reports_every_violation_with_its_path(
    value: Any, payload: dict[str, Any], paths: list[list[Any]]
) -> None:
    violations = check_value(value, t(payload))
    assert [v.path for v in violations] == paths
    assert all(v.message for v in violations)


def test_violation_describes_where_and_what() -> None:
    [violation] = check_value({"a": [1, "x"]}, t(record(a=({"kind": "array", "items": INT}, True))))
    assert violation.describe().startswith("a[1]: expected an integer")
