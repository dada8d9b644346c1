"""Small constructors for graph documents (wire form), shared by the templates.

Templates are ordinary graphs: these helpers only spare them from spelling out the
same dictionaries many times.
"""

from __future__ import annotations

from typing import Any

FULL_PROFILE = "openengine.graph.full/v1"
TEMPLATE_POLICY = {"policy": "policy.native-v2@1", "default": "deny"}
AGENT_TIMEOUT_MS = 3_600_000
ERROR_LABELS = ["crash", "malformed", "refusal", "timeout"]

Doc = dict[str, Any]


def string() -> Doc:
    return {"kind": "string"}


def integer() -> Doc:
    return {"kind": "integer"}


def number() -> Doc:
    return {"kind": "number"}


def boolean() -> Doc:
    return {"kind": "boolean"}


def enum(*values: str) -> Doc:
    return {"kind": "enum", "values": sorted(values)}


def record(required: dict[str, Doc] | None = None, optional: dict[str, Doc] | None = None) -> Doc:
    fields = {name: {"type": t, "required": True} for name, t in (required or {}).items()}
    fields |= {name: {"type": t, "required": False} for name, t in (optional or {}).items()}
    return {"kind": "record", "fields": fields}


def from_state(target: list[str], path: list[str] | None = None) -> Doc:
    """Input binding: ``target`` of the input <- the same (or ``path``) of the state."""
    return {"target": target, "value": {"source": "state", "path": path or target}}


def write(target: list[str], node: str, channel: str, path: list[str]) -> Doc:
    return {"target": target, "value": {"node": node, "channel": channel, "path": path}}


def step(
    name: str,
    worker: str,
    *,
    input: Doc,
    output: Doc,
    input_bindings: list[Doc],
    write_bindings: list[Doc],
    instructions: str | None = None,
    timeout_ms: int = AGENT_TIMEOUT_MS,
    attempts: int = 1,
) -> Doc:
    node = {
        "kind": "step",
        "name": name,
        "worker": worker,
        "input": input,
        "output": output,
        "inputBindings": input_bindings,
        "writeBindings": write_bindings,
        "timeoutMs": timeout_ms,
        "attempts": attempts,
    }
    if instructions is not None:
        node["instructions"] = instructions
    return node


def verifier(
    name: str,
    worker: str,
    *,
    input: Doc,
    output: Doc,
    signals: dict[str, list[str]],
    diagnostic: Doc,
    input_bindings: list[Doc],
    write_bindings: list[Doc],
    instructions: str | None = None,
    timeout_ms: int = AGENT_TIMEOUT_MS,
    attempts: int = 1,
) -> Doc:
    node = step(
        name,
        worker,
        input=input,
        output=output,
        input_bindings=input_bindings,
        write_bindings=write_bindings,
        instructions=instructions,
        timeout_ms=timeout_ms,
        attempts=attempts,
    )
    return {
        **node,
        "kind": "verifier",
        "signals": {k: sorted(v) for k, v in signals.items()},
        "diagnostic": diagnostic,
    }


def seq(name: str, state: Doc, children: list[Doc], promoted: list[list[str]] | None = None) -> Doc:
    return {
        "kind": "seq",
        "name": name,
        "state": state,
        "children": children,
        "promotedStatePaths": promoted or [],
    }


def branch(when: Doc, node: Doc) -> Doc:
    return {"when": when, "node": node}


def choice(
    name: str,
    state: Doc,
    branches: list[Doc],
    otherwise: Doc | None,
    promoted: list[list[str]] | None = None,
) -> Doc:
    return {
        "kind": "choice",
        "name": name,
        "state": state,
        "branches": branches,
        "otherwise": otherwise,
        "promotedStatePaths": promoted or [],
    }


def par(
    name: str, state: Doc, branches: list[Doc], join: Doc, promoted: list[list[str]] | None = None
) -> Doc:
    return {
        "kind": "par",
        "name": name,
        "state": state,
        "branches": branches,
        "join": join,
        "promotedStatePaths": promoted or [],
    }


def loop(
    name: str,
    state: Doc,
    body: Doc,
    max_iterations: int,
    until: Doc | None = None,
    promoted: list[list[str]] | None = None,
) -> Doc:
    node = {
        "kind": "loop",
        "name": name,
        "state": state,
        "body": body,
        "maxIterations": max_iterations,
        "promotedStatePaths": promoted or [],
    }
    if until is not None:
        node["until"] = until
    return node


def succeed(name: str, output: Doc, bindings: list[Doc]) -> Doc:
    return {"kind": "succeed", "name": name, "output": output, "bindings": bindings}


def fail(name: str, reason: str | None = None) -> Doc:
    return {"kind": "fail", "name": name, "reason": reason or name}


def errored(node: str) -> Doc:
    """Guard: ``node`` ended with any error."""
    return {
        "kind": "in",
        "value": {"name": node, "source": "error", "field": None},
        "labels": ERROR_LABELS,
    }


def signal_in(node: str, signal: str, *labels: str) -> Doc:
    return {
        "kind": "in",
        "value": {"name": node, "source": "signal", "field": signal},
        "labels": sorted(labels),
    }


def group_in(node: str, field: str, *labels: str) -> Doc:
    return {
        "kind": "in",
        "value": {"name": node, "source": "group", "field": field},
        "labels": sorted(labels),
    }


def any_of(*guards: Doc) -> Doc:
    return {"kind": "any", "guards": list(guards)}


def graph(initial_input: Doc, root: Doc) -> Doc:
    return {
        "profile": FULL_PROFILE,
        "initialInput": initial_input,
        "policy": TEMPLATE_POLICY,
        "root": root,
    }
