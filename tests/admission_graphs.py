"""Small valid graphs for admission tests, as wire documents."""

from __future__ import annotations

from typing import Any

INT = {"kind": "integer"}
POLICY = {"policy": "policy.default@1", "default": "deny"}
ERRORS = ["crash", "malformed", "refusal", "timeout"]


def record(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "record",
        "fields": {k: {"type": v, "required": True} for k, v in fields.items()},
    }


def step(name: str, **extra: Any) -> dict[str, Any]:
    node = {
        "kind": "step",
        "name": name,
        "worker": f"demo.{name}@1",
        "input": {"kind": "null"},
        "output": {"kind": "null"},
        "inputBindings": [],
        "writeBindings": [],
        "timeoutMs": 1000,
        "attempts": 1,
    }
    return {**node, **extra}


def verifier(name: str, **extra: Any) -> dict[str, Any]:
    node = {
        **step(name),
        "kind": "verifier",
        "signals": {"verdict": ["accepted", "rejected"]},
        "diagnostic": {"kind": "null"},
    }
    return {**node, **extra}


def guarded(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body``, then fail on its error, else succeed."""
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": record(value=INT),
        "policy": POLICY,
        "root": {
            "kind": "seq",
            "name": "root",
            "state": record(value=INT),
            "promotedStatePaths": [],
            "children": [
                body,
                {
                    "kind": "choice",
                    "name": "check",
                    "state": record(value=INT),
                    "promotedStatePaths": [],
                    "branches": [
                        {
                            "when": {
                                "kind": "in",
                                "labels": ERRORS,
                                "value": {"name": name, "source": "error"},
                            },
                            "node": {"kind": "fail", "name": "broken", "reason": "broken"},
                        }
                    ],
                    "otherwise": {
                        "kind": "succeed",
                        "name": "done",
                        "output": {"kind": "null"},
                        "bindings": [],
                    },
                },
            ],
        },
    }


def parallel_pair(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two executables side by side in an all-join, then succeed."""
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": record(value=INT),
        "policy": POLICY,
        "root": {
            "kind": "seq",
            "name": "root",
            "state": record(value=INT),
            "promotedStatePaths": [],
            "children": [
                {
                    "kind": "par",
                    "name": "both",
                    "state": record(value=INT),
                    "promotedStatePaths": [],
                    "join": {"kind": "all"},
                    "branches": [first, second],
                },
                {"kind": "succeed", "name": "done", "output": {"kind": "null"}, "bindings": []},
            ],
        },
    }


def mapped(body: dict[str, Any], max_items: int) -> dict[str, Any]:
    state = {
        "kind": "record",
        "fields": {
            "value": {"type": INT, "required": True},
            "items": {"type": {"kind": "array", "items": INT}, "required": True},
        },
    }
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": state,
        "policy": POLICY,
        "root": {
            "kind": "seq",
            "name": "root",
            "state": state,
            "promotedStatePaths": [],
            "children": [
                {
                    "kind": "map",
                    "name": "each",
                    "state": state,
                    "promotedStatePaths": [],
                    "over": {"source": "state", "path": ["items"]},
                    "maxItems": max_items,
                    "body": body,
                },
                {"kind": "succeed", "name": "done", "output": {"kind": "null"}, "bindings": []},
            ],
        },
    }
