"""A tiny pure simulation of a controller around the reducer, plus graph builders.

``Sim`` keeps a history of ``HistoryEntry`` values with its own position counter: it applies
decisions (voids first, then dispatches) and settles executions with scripted outcomes, so a
test can drive a run step by step or to its end. No ledger, no processes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from conftest import conformance_dir, load_json, require

from zeroshot_kernel.contract.graph import CompiledGraphIr
from zeroshot_kernel.contract.outcome import (
    ErrorCode,
    VerifiedOutcome,
    VerifierOutcome,
    WorkerOutcome,
    error,
)
from zeroshot_kernel.engine.decisions import Decisions, Dispatch
from zeroshot_kernel.engine.history import Active, HistoryEntry, Settled, Voided
from zeroshot_kernel.engine.reducer import reduce

RUN_ID = "run-sim"
Worker = Callable[[HistoryEntry], WorkerOutcome]

# --- outcomes ---------------------------------------------------------------------------


def ok(output: Any = None) -> WorkerOutcome:
    return VerifiedOutcome(status="verified", output=output)


def verdict(label: str, output: Any = None, diagnostic: Any = None) -> WorkerOutcome:
    """A fixture verifier's answer (``fixture.verifier@1``: output {result}, diagnostic
    {code}, signal ``verdict``)."""
    return VerifierOutcome(
        status="verifier",
        output={"result": 1} if output is None else output,
        signals={"verdict": label},
        diagnostic={"code": 0} if diagnostic is None else diagnostic,
    )


def fails(code: ErrorCode) -> WorkerOutcome:
    if code == "malformed":
        return error("malformed", "malformed_result")
    return error(code)


def script(
    outcomes: dict[str, list[WorkerOutcome]], default: WorkerOutcome | None = None
) -> Worker:
    """Outcomes per node (or ``node[i]`` for a map item), consumed in dispatch order."""
    queues = {key: list(values) for key, values in outcomes.items()}

    def worker(entry: HistoryEntry) -> WorkerOutcome:
        scoped = entry.occurrence.node + "".join(f"[{i}]" for i in entry.occurrence.map_indices)
        for key in (scoped, entry.occurrence.node):
            if queues.get(key):
                return queues[key].pop(0)
        if default is None:
            raise AssertionError(f"no scripted outcome left for {scoped}")
        return default

    return worker


# --- graphs -----------------------------------------------------------------------------

FIXTURES = "fixtures/verifier/positive"


def fixture_ir(name: str) -> CompiledGraphIr:
    path = conformance_dir() / FIXTURES / f"{name}.json"
    require(path.is_file(), f"verifier fixture {path} not found; set ZEROSHOT_CONFORMANCE_DIR")
    return CompiledGraphIr.from_wire(load_json(path)["expected"]["compiledIr"])


def compiled(root: dict[str, Any], initial_input: dict[str, Any] | None = None) -> CompiledGraphIr:
    """A hand-built graph as compiled IR; the reducer never reads bounds, so they are nominal."""
    return CompiledGraphIr.from_wire(
        {
            "profile": "openengine.graph.full/v1",
            "initialInput": initial_input or record(),
            "policy": {"policy": "policy.test@1", "default": "deny"},
            "root": root,
            "bounds": {
                "termination": {"kind": "acyclic", "order": [root["name"]]},
                "maxNodeExecutions": 1,
                "peakConcurrency": 1,
                "attemptsPerNode": {},
            },
        }
    )


INT = {"kind": "integer"}
NULL = {"kind": "null"}


def record(**fields: Any) -> dict[str, Any]:
    """``record(n=INT)``: every field required; wrap a type in ``optional`` to relax it."""
    return {
        "kind": "record",
        "fields": {
            name: field if "required" in field else {"type": field, "required": True}
            for name, field in fields.items()
        },
    }


def optional(type_: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "required": False}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "array", "items": items}


def state(*path: str) -> dict[str, Any]:
    return {"source": "state", "path": list(path)}


def item(*path: str) -> dict[str, Any]:
    return {"source": "item", "path": list(path)}


def bind(target: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"target": target.split("."), "value": value}


def write(target: str, node: str, channel: str = "out", path: str = "n") -> dict[str, Any]:
    return {
        "target": target.split("."),
        "value": {"node": node, "channel": channel, "path": path.split(".")},
    }


def step(
    name: str,
    *,
    input: dict[str, Any] = NULL,
    output: dict[str, Any] = NULL,
    inputs: Iterable[dict[str, Any]] = (),
    writes: Iterable[dict[str, Any]] = (),
    attempts: int = 1,
) -> dict[str, Any]:
    return {
        "kind": "step",
        "name": name,
        "worker": "worker.test@1",
        "input": input,
        "output": output,
        "inputBindings": list(inputs),
        "writeBindings": list(writes),
        "timeoutMs": 1000,
        "attempts": attempts,
    }


def verifier(
    name: str, *, attempts: int = 1, writes: Iterable[dict[str, Any]] = ()
) -> dict[str, Any]:
    return {
        "kind": "verifier",
        "name": name,
        "worker": "worker.verify@1",
        "input": NULL,
        "output": NULL,
        "inputBindings": [],
        "writeBindings": list(writes),
        "timeoutMs": 1000,
        "attempts": attempts,
        "signals": {"verdict": ["accepted", "rejected"]},
        "diagnostic": NULL,
    }


def seq(
    name: str,
    *children: dict[str, Any],
    promote: Iterable[str] = (),
    state_type: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "seq",
        "name": name,
        "state": state_type or record(),
        "children": list(children),
        "promotedStatePaths": [p.split(".") for p in promote],
    }


def par(
    name: str, *branches: dict[str, Any], join: dict[str, Any], promote: Iterable[str] = ()
) -> dict[str, Any]:
    return {
        "kind": "par",
        "name": name,
        "state": record(),
        "branches": list(branches),
        "join": join,
        "promotedStatePaths": [p.split(".") for p in promote],
    }


def loop(
    name: str,
    body: dict[str, Any],
    *,
    max_iterations: int,
    until: dict[str, Any] | None = None,
    promote: Iterable[str] = (),
) -> dict[str, Any]:
    node = {
        "kind": "loop",
        "name": name,
        "state": record(),
        "body": body,
        "maxIterations": max_iterations,
        "promotedStatePaths": [p.split(".") for p in promote],
    }
    if until is not None:
        node["until"] = until
    return node


def map_(
    name: str,
    body: dict[str, Any],
    *,
    over: dict[str, Any],
    max_items: int,
    promote: Iterable[str] = (),
) -> dict[str, Any]:
    return {
        "kind": "map",
        "name": name,
        "state": record(),
        "body": body,
        "over": over,
        "maxItems": max_items,
        "promotedStatePaths": [p.split(".") for p in promote],
    }


def choice(
    name: str,
    *branches: tuple[dict[str, Any], dict[str, Any]],
    otherwise: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "choice",
        "name": name,
        "state": record(),
        "branches": [{"when": when, "node": node} for when, node in branches],
        "otherwise": otherwise,
        "promotedStatePaths": [],
    }


def succeed(
    name: str = "done", *, output: dict[str, Any] = NULL, bindings: Iterable[dict[str, Any]] = ()
) -> dict[str, Any]:
    return {"kind": "succeed", "name": name, "output": output, "bindings": list(bindings)}


def fail(name: str, reason: str = "rejected") -> dict[str, Any]:
    return {"kind": "fail", "name": name, "reason": reason}


def control(name: str, source: str, field: str | None = None) -> dict[str, Any]:
    return {"name": name, "source": source, "field": field}


def in_(selector: dict[str, Any], *labels: str) -> dict[str, Any]:
    return {"kind": "in", "value": selector, "labels": list(labels)}


ERRORS = ("crash", "malformed", "refusal", "timeout")

# --- the simulation ---------------------------------------------------------------------


class Sim:
    """A run's history under a scripted controller."""

    def __init__(self, ir: CompiledGraphIr, initial_input: Any, run_id: str = RUN_ID):
        self.ir = ir
        self.initial_input = initial_input
        self.run_id = run_id
        self.entries: dict[str, HistoryEntry] = {}
        self.position = 0
        self.reductions: list[tuple[tuple[HistoryEntry, ...], Decisions]] = []

    @property
    def history(self) -> list[HistoryEntry]:
        return list(self.entries.values())

    def reduce(self) -> Decisions:
        history = tuple(self.history)
        decisions = reduce(self.ir, self.initial_input, history, run_id=self.run_id)
        self.reductions.append((history, decisions))
        return decisions

    def _next(self) -> int:
        self.position += 1
        return self.position

    def apply(self, decisions: Decisions) -> None:
        for void in decisions.voids:
            self._update(void.execution, Voided(self._next(), void.reason))
        for dispatch in decisions.dispatches:
            self.record(dispatch)

    def record(self, dispatch: Dispatch) -> HistoryEntry:
        entry = HistoryEntry(
            dispatch_position=self._next(),
            node_instance=dispatch.node_instance,
            execution=dispatch.execution,
            occurrence=dispatch.occurrence,
            attempt=dispatch.attempt,
            input=dispatch.input,
            state=Active(),
        )
        self.entries[entry.execution] = entry
        return entry

    def step(self) -> Decisions:
        """Reduce and apply: what a controller does between completions."""
        decisions = self.reduce()
        self.apply(decisions)
        return decisions

    def active(self, node: str | None = None, *map_indices: int) -> list[HistoryEntry]:
        return [
            entry
            for entry in self.entries.values()
            if isinstance(entry.state, Active)
            and (node is None or entry.occurrence.node == node)
            and (not map_indices or tuple(entry.occurrence.map_indices) == map_indices)
        ]

    def settle(self, node: str, outcome: WorkerOutcome, *map_indices: int) -> HistoryEntry:
        """Settle the one active execution of ``node`` (at ``map_indices``)."""
        (entry,) = self.active(node, *map_indices)
        return self._update(entry.execution, Settled(self._next(), outcome))

    def _update(self, execution: str, new_state: Active | Settled | Voided) -> HistoryEntry:
        entry = dataclasses.replace(self.entries[execution], state=new_state)
        self.entries[execution] = entry
        return entry

    def run(self, worker: Worker, rounds: int = 100) -> Decisions:
        """Step and settle every active execution (in dispatch order) until the run is done."""
        for _ in range(rounds):
            decisions = self.step()
            if decisions.finished:
                return decisions
            for entry in self.active():
                self._update(entry.execution, Settled(self._next(), worker(entry)))
        raise AssertionError("the run did not finish")

    def dispatched(self, node: str) -> list[HistoryEntry]:
        return [entry for entry in self.entries.values() if entry.occurrence.node == node]


def history_at(history: Iterable[HistoryEntry], position: int) -> list[HistoryEntry]:
    """The history as it stood at ``position``: later dispatches dropped, later settlements
    and voids undone."""
    past = []
    for entry in history:
        if entry.dispatch_position > position:
            continue
        if isinstance(entry.state, Settled | Voided) and entry.state.position > position:
            entry = dataclasses.replace(entry, state=Active())
        past.append(entry)
    return past
