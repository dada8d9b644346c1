"""Canonical bytes and identity of a compiled graph.

Two graphs that differ only in the order of set-like collections (bindings, promoted
paths, par branches, commutative guards, k-of-n selectors) have the same identity;
anything that changes behaviour (sequence order, a bound, a worker) changes it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from zeroshot_kernel.contract.graph import CompiledGraphIr
from zeroshot_kernel.exceptions import InvalidInput


class CanonicalError(InvalidInput):
    """The graph cannot be written canonically (it carries a floating-point value)."""


def canonical_bytes(ir: CompiledGraphIr) -> bytes:
    """Compact JSON, keys in UTF-8 byte order, set-like collections normalised."""
    document = ir.to_wire()
    document["root"] = _normalize_node(document["root"])
    return dump_canonical(document)


def graph_identity(ir: CompiledGraphIr) -> str:
    """Hex SHA-256 of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(ir)).hexdigest()


def dump_canonical(value: Any, *, allow_floats: bool = False) -> bytes:
    """Canonical JSON bytes of any JSON-ready value."""
    if not allow_floats:
        _reject_floats(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_fingerprint(method: str, params: dict[str, Any]) -> str:
    """Idempotency fingerprint: SHA-256 of key-sorted ``{method, params}``, key excluded."""
    body = {k: v for k, v in params.items() if k != "idempotencyKey"}
    return hashlib.sha256(
        dump_canonical({"method": method, "params": body}, allow_floats=True)
    ).hexdigest()


def _reject_floats(value: Any) -> None:
    if isinstance(value, float):
        raise CanonicalError("canonical graphs cannot contain floating-point numbers")
    if isinstance(value, dict):
        for item in value.values():
            _reject_floats(item)
    elif isinstance(value, list):
        for item in value:
            _reject_floats(item)


def _key(value: Any) -> bytes:
    return dump_canonical(value, allow_floats=True)


def _sorted(values: list[Any]) -> list[Any]:
    return sorted(values, key=_key)


def _sorted_unique(values: list[Any]) -> list[Any]:
    unique = {_key(v): v for v in values}
    return [unique[k] for k in sorted(unique)]


def _normalize_guard(guard: dict[str, Any]) -> dict[str, Any]:
    kind = guard["kind"]
    if kind == "k_of_n":
        return {**guard, "values": _sorted(guard["values"])}
    if kind == "not":
        return {**guard, "guard": _normalize_guard(guard["guard"])}
    if kind in ("all", "any"):
        flattened: list[Any] = []
        for inner in map(_normalize_guard, guard["guards"]):
            flattened.extend(inner["guards"] if inner["kind"] == kind else [inner])
        return {**guard, "guards": _sorted_unique(flattened)}
    return guard


def _normalize_node(node: dict[str, Any]) -> dict[str, Any]:
    node = dict(node)
    kind = node["kind"]
    if kind in ("step", "verifier"):
        node["inputBindings"] = _sorted(node["inputBindings"])
        node["writeBindings"] = _sorted(node["writeBindings"])
    elif kind == "succeed":
        node["bindings"] = _sorted(node["bindings"])
    if "promotedStatePaths" in node:
        node["promotedStatePaths"] = _sorted_unique(node["promotedStatePaths"])
    if kind == "seq":
        node["children"] = [_normalize_node(child) for child in node["children"]]
    elif kind == "choice":
        node["branches"] = [
            {**b, "when": _normalize_guard(b["when"]), "node": _normalize_node(b["node"])}
            for b in node["branches"]
        ]
        if node["otherwise"] is not None:
            node["otherwise"] = _normalize_node(node["otherwise"])
    elif kind == "par":
        branches = [_normalize_node(branch) for branch in node["branches"]]
        node["branches"] = sorted(branches, key=lambda b: b["name"])
        if node["join"]["kind"] == "first":
            node["join"] = {**node["join"], "when": _normalize_guard(node["join"]["when"])}
    elif kind in ("loop", "map"):
        node["body"] = _normalize_node(node["body"])
        if node.get("until") is not None:
            node["until"] = _normalize_guard(node["until"])
    return node
