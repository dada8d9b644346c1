"""B3: admission (parse, verify, bounds, compile) of large generated graphs.

Graphs of exactly 64, 512 and 4,096 nodes are a root seq of repeated blocks that use every
node kind: a step, a verifier whose verdict routes a choice, a par with an all-join, a
do-while loop until a verifier accepts, and a map over the state's items (and the same
without the choice). Wide choices, one branch per label of one verifier's signal or one
branch per verifier, check that deciding exhaustiveness does not blow up. Each sample is
one ``admit`` call on the wire document (``require_runtime=False``: no runtime plan, so
nothing is imported).
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from bench.harness import Report, Summary, alternate, verdict, versions
from zeroshot_kernel.admission.admit import admit

SIZES = (64, 512, 4_096)
LABELS_WIDE = (16, 64, 256)
VERIFIERS_WIDE = (4, 8, 16)
PROBE_LIMIT_S = 60.0
"""A first admission still running after this long is stopped and reported as such."""
REPEAT_LIMIT_S = 3.0
"""Graphs whose first admission took longer are reported from that one sample."""
FAST_S = 1.0
""""Well under the time one agent call takes" for 4,096 nodes, taken as one second."""

INT = {"kind": "integer"}
NUMBER = {"kind": "number"}
LABELS = ["accepted", "rejected"]


def record(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "record",
        "fields": {name: {"type": kind, "required": True} for name, kind in fields.items()},
    }


STATE = record(value=INT, items={"kind": "array", "items": record(value=INT)})
VALUE_IN = [{"target": ["value"], "value": {"source": "state", "path": ["value"]}}]


def step(name: str, inputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "kind": "step",
        "name": name,
        "worker": "bench.step@1",
        "input": record(value=INT),
        "output": record(result=NUMBER),
        "inputBindings": inputs or VALUE_IN,
        "writeBindings": [],
        "timeoutMs": 60_000,
        "attempts": 2,
    }


def verifier(name: str) -> dict[str, Any]:
    return {
        "kind": "verifier",
        "name": name,
        "worker": "bench.verify@1",
        "input": record(value=INT),
        "output": record(result=NUMBER),
        "inputBindings": VALUE_IN,
        "writeBindings": [],
        "timeoutMs": 60_000,
        "attempts": 1,
        "signals": {"verdict": LABELS},
        "diagnostic": {"kind": "null"},
    }


def group(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "state": STATE, "promotedStatePaths": [], **fields}


def verdict_is(node: str, *labels: str) -> dict[str, Any]:
    return {
        "kind": "in",
        "value": {"name": node, "source": "signal", "field": "verdict"},
        "labels": list(labels),
    }


def block(index: int) -> dict[str, Any]:
    """13 nodes of every kind; nothing in a block ends the graph."""
    name = f"b{index}"
    item_in = [{"target": ["value"], "value": {"source": "item", "path": ["value"]}}]
    return group(
        "seq",
        name,
        children=[
            step(f"{name}_work"),
            verifier(f"{name}_check"),
            group(
                "choice",
                f"{name}_route",
                branches=[
                    {"when": verdict_is(f"{name}_check", "rejected"), "node": step(f"{name}_fix")}
                ],
                otherwise=step(f"{name}_keep"),
            ),
            group(
                "par",
                f"{name}_fan",
                join={"kind": "all"},
                branches=[step(f"{name}_left"), step(f"{name}_right")],
            ),
            group(
                "loop",
                f"{name}_retry",
                body=verifier(f"{name}_review"),
                maxIterations=3,
                until=verdict_is(f"{name}_review", "accepted"),
            ),
            group(
                "map",
                f"{name}_each",
                over={"source": "state", "path": ["items"]},
                maxItems=4,
                body=step(f"{name}_item", item_in),
            ),
        ],
    )


def document(root: dict[str, Any]) -> dict[str, Any]:
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": STATE,
        "policy": {"policy": "policy.bench@1", "default": "deny"},
        "root": root,
    }


DONE = {"kind": "succeed", "name": "done", "output": {"kind": "null"}, "bindings": []}


def mixed(nodes: int, make: Callable[[int], dict[str, Any]] = block) -> dict[str, Any]:
    """Exactly ``nodes`` nodes: blocks in a root seq, padded with steps, then succeed."""
    size = count(make(0))
    blocks = max(1, (nodes - 2) // size)
    padding = nodes - 2 - blocks * size
    children = [
        *(make(i) for i in range(blocks)),
        *(step(f"pad{i}") for i in range(max(0, padding))),
        DONE,
    ]
    return document(group("seq", "root", children=children))


def plain_block(index: int) -> dict[str, Any]:
    """:func:`block` without its choice (10 nodes): the same kinds, no routing decision."""
    full = block(index)
    return {**full, "children": [c for c in full["children"] if c["kind"] != "choice"]}


def wide_labels(labels: int) -> dict[str, Any]:
    """One verifier whose signal has ``labels`` labels; a choice with a branch per label."""
    check = {**verifier("v"), "signals": {"verdict": [f"l{i}" for i in range(labels)]}}
    branches = [{"when": verdict_is("v", f"l{i}"), "node": step(f"r{i}")} for i in range(labels)]
    route = group("choice", "route", branches=branches, otherwise=step("rest"))
    return document(group("seq", "root", children=[check, route, DONE]))


def wide_verifiers(verifiers: int) -> dict[str, Any]:
    """``verifiers`` verifiers; a choice with a branch per verifier (its verdict rejected)."""
    checks = [verifier(f"v{i}") for i in range(verifiers)]
    branches = [
        {"when": verdict_is(f"v{i}", "rejected"), "node": step(f"r{i}")} for i in range(verifiers)
    ]
    route = group("choice", "route", branches=branches, otherwise=step("rest"))
    return document(group("seq", "root", children=[*checks, route, DONE]))


def count(node: dict[str, Any]) -> int:
    inner = [
        *node.get("children", []),
        *(b["node"] for b in node.get("branches", []) if isinstance(b, dict) and "node" in b),
    ]
    if node.get("kind") == "par":
        inner = list(node["branches"])
    inner += [node[key] for key in ("body", "otherwise") if node.get(key)]
    return 1 + sum(count(child) for child in inner)


INPUT = {"value": 1, "items": [{"value": 1}, {"value": 2}]}


def admit_once(graph: dict[str, Any]) -> tuple[float, str]:
    """Seconds for one admission, and its outcome (``admitted`` or the diagnostic codes)."""
    start = time.perf_counter()
    result = admit(graph, initial_input=INPUT, require_runtime=False)
    elapsed = time.perf_counter() - start
    codes = sorted({d.code for d in result.diagnostics})
    return elapsed, "admitted" if result.ok else "rejected: " + ", ".join(codes)


def _child(graph: dict[str, Any], answer: Connection) -> None:
    answer.send(admit_once(graph))


def probe(graph: dict[str, Any]) -> tuple[float, str]:
    """:func:`admit_once` in a child process, stopped after ``PROBE_LIMIT_S``."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(graph, send), daemon=True)
    child.start()
    try:
        if receive.poll(PROBE_LIMIT_S):
            found: tuple[float, str] = receive.recv()
            return found
        return PROBE_LIMIT_S, f"stopped after {PROBE_LIMIT_S:g} s"
    finally:
        child.kill()
        child.join()


def _sample(graph: dict[str, Any]) -> Callable[[], float]:
    return lambda: admit_once(graph)[0]


def run(repeats: int) -> Report:
    report = Report("B3", "admission of large generated graphs")
    report.versions = versions(["zeroshot-workbench", "pydantic"])
    families: dict[str, dict[str, dict[str, Any]]] = {
        "mixed": {f"{n:,}": mixed(n) for n in SIZES},
        "mixed, no choice": {f"{n:,}": mixed(n, plain_block) for n in SIZES},
        "wide choice, one verifier": {f"{n} labels": wide_labels(n) for n in LABELS_WIDE},
        "wide choice, many verifiers": {
            f"{n} verifiers": wide_verifiers(n) for n in VERIFIERS_WIDE
        },
    }
    graphs = {
        (family, size): graph
        for family, members in families.items()
        for size, graph in members.items()
    }
    probes = {key: probe(graph) for key, graph in graphs.items()}
    repeatable = {key for key, (seconds, _) in probes.items() if seconds < REPEAT_LIMIT_S}
    samples = alternate({f"{k[0]} {k[1]}": _sample(graphs[k]) for k in sorted(repeatable)}, repeats)
    seconds: dict[tuple[str, str], Summary] = {
        key: Summary.of(samples[f"{key[0]} {key[1]}"])
        if key in repeatable
        else Summary.of([probes[key][0]])
        for key in graphs
    }
    report.table(
        ["graph", "size", "nodes", "outcome", "ms per admission (median)", "spread"],
        [
            [
                family,
                size,
                f"{count(graphs[(family, size)]['root']):,}",
                probes[(family, size)][1],
                f"{seconds[(family, size)].median * 1e3:,.0f}",
                (
                    f"{seconds[(family, size)].low * 1e3:,.0f} - "
                    f"{seconds[(family, size)].high * 1e3:,.0f}"
                )
                if (family, size) in repeatable
                else "one sample",
            ]
            for family, size in graphs
        ],
    )
    growth = []
    for family in ("mixed", "mixed, no choice", "wide choice, one verifier"):
        for small, large in itertools.pairwise(families[family]):
            growth.append(_growth(family, small, large, graphs, probes, seconds))
    report.table(["growth", "nodes", "time ratio", "bar (n log n)", "verdict"], growth)
    largest = seconds[("mixed", f"{SIZES[-1]:,}")].median
    report.notes += [
        f"Each graph is admitted once in a child process first (stopped after "
        f"{PROBE_LIMIT_S:g} s); graphs that took under {REPEAT_LIMIT_S:g} s are then "
        f"measured {repeats} times, alternated; the others are reported from that sample.",
        f"4,096 mixed nodes: {largest:.2f} s ({probes[('mixed', f'{SIZES[-1]:,}')][1]}); "
        f"'well under the time one agent call takes' is read as under {FAST_S:g} s: "
        + verdict(largest, FAST_S)
        + ".",
        "`mixed`: blocks of step, verifier, choice on the verifier's verdict (otherwise a "
        "step), par (all-join), do-while loop until a verifier accepts, map over the state's "
        "items. `mixed, no choice`: the same blocks without the choice. Wide choices: one "
        "branch per label of one verifier's signal, or one branch per verifier.",
    ]
    return report


def _growth(
    family: str,
    small: str,
    large: str,
    graphs: dict[tuple[str, str], dict[str, Any]],
    probes: dict[tuple[str, str], tuple[float, str]],
    seconds: dict[tuple[str, str], Summary],
) -> list[str]:
    n_small = count(graphs[(family, small)]["root"])
    n_large = count(graphs[(family, large)]["root"])
    bound = (n_large * math.log(n_large)) / (n_small * math.log(n_small))
    label = f"{family}: {small} → {large}"
    nodes = f"{n_small:,} → {n_large:,}"
    if probes[(family, large)][1] != "admitted":
        return [
            label,
            nodes,
            "-",
            f"≤ {bound:.2f}x",
            f"**missed**: the larger graph was {probes[(family, large)][1]}",
        ]
    ratio = seconds[(family, large)].median / seconds[(family, small)].median
    return [label, nodes, f"{ratio:.2f}x", f"≤ {bound:.2f}x", verdict(ratio, bound)]
