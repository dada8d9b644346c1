"""Structural bounds, dependency order, ceilings and the compiled IR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_params, load_json

from zeroshot_kernel.admission.bounds import compile_ir, structural_bounds
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic, field, index, node
from zeroshot_kernel.contract.graph import AcyclicTermination, GraphSpec, StructuralBounds
from zeroshot_kernel.contract.parse import parse_graph

NULL = {"kind": "null"}


def _graph(document: Any) -> GraphSpec:
    result = parse_graph(document)
    assert result.value is not None, result.diagnostics
    return result.value


def _bounds(root: dict[str, Any]) -> tuple[StructuralBounds | None, list[GraphDiagnostic]]:
    return structural_bounds(
        _graph(
            {
                "profile": "openengine.graph.full/v1",
                "initialInput": NULL,
                "policy": {"policy": "policy.strict@1", "default": "deny"},
                "root": root,
            }
        )
    )


def step(name: str, attempts: int = 1, reads: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "kind": "step",
        "name": name,
        "worker": "fixture.worker@1",
        "input": NULL,
        "output": NULL,
        "inputBindings": [],
        "timeoutMs": 1,
        "attempts": attempts,
        "writeBindings": [
            {
                "target": [f"from_{other}"],
                "value": {"node": other, "channel": "out", "path": ["result"]},
            }
            for other in reads
        ],
    }


def succeed(name: str) -> dict[str, Any]:
    return {"kind": "succeed", "name": name, "output": NULL, "bindings": []}


def seq(name: str, *children: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "seq",
        "name": name,
        "state": NULL,
        "children": list(children),
        "promotedStatePaths": [],
    }


def par(name: str, *branches: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "par",
        "name": name,
        "state": NULL,
        "branches": list(branches),
        "promotedStatePaths": [],
        "join": {"kind": "all"},
    }


def loop(name: str, body: dict[str, Any], iterations: int) -> dict[str, Any]:
    return {
        "kind": "loop",
        "name": name,
        "state": NULL,
        "body": body,
        "maxIterations": iterations,
        "promotedStatePaths": [],
    }


def map_(name: str, body: dict[str, Any], items: int) -> dict[str, Any]:
    return {
        "kind": "map",
        "name": name,
        "state": NULL,
        "body": body,
        "maxItems": items,
        "over": {"source": "state", "path": ["items"]},
        "promotedStatePaths": [],
    }


def choice(name: str, when: dict[str, Any], then: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "choice",
        "name": name,
        "state": NULL,
        "otherwise": None,
        "branches": [{"when": when, "node": then}],
        "promotedStatePaths": [],
    }


def is_error(of: str) -> dict[str, Any]:
    return {
        "kind": "in",
        "value": {"name": of, "source": "error", "field": None},
        "labels": ["crash"],
    }


def _found(diagnostics: list[GraphDiagnostic]) -> list[tuple[str, list[Any], list[str]]]:
    return [(d.code, d.path, d.related_nodes) for d in diagnostics]


# --- conformance --------------------------------------------------------------------------


@pytest.mark.conformance
@pytest.mark.parametrize("path", fixture_params("verifier/positive"))
def test_compiled_ir_matches_fixture(conformance: Path, path: Path) -> None:
    fixture = load_json(path)
    graph = _graph(fixture["graph"])
    bounds, diagnostics = structural_bounds(graph)
    assert diagnostics == [] and bounds is not None
    assert compile_ir(graph, bounds).to_wire() == fixture["expected"]["compiledIr"]


@pytest.mark.conformance
def test_cyclic_read_reports_the_cycle(conformance: Path) -> None:
    fixture = load_json(conformance / "fixtures/verifier/negative/cyclic-read.json")
    bounds, diagnostics = structural_bounds(_graph(fixture["graph"]))
    expected = [d for d in fixture["expected"]["diagnostics"] if d["code"] == "cyclic_reference"]
    assert bounds is None
    assert [{k: v for k, v in d.to_wire().items() if k != "message"} for d in diagnostics] == [
        {k: v for k, v in d.items() if k != "message"} for d in expected
    ]


# --- order --------------------------------------------------------------------------------


def test_order_puts_what_a_node_reads_first_and_otherwise_keeps_pre_order() -> None:
    bounds, _ = _bounds(seq("root", step("a", reads=("b",)), step("b"), succeed("done")))
    assert bounds is not None and isinstance(bounds.termination, AcyclicTermination)
    assert bounds.termination.order == ["root", "b", "a", "done"]


def test_choice_waits_for_the_nodes_its_guards_read() -> None:
    root = seq("root", choice("route", is_error("late"), succeed("done")), step("late"))
    bounds, _ = _bounds(root)
    assert bounds is not None and isinstance(bounds.termination, AcyclicTermination)
    # `done` has no dependency, so it is ready before `late` and takes its pre-order place.
    assert bounds.termination.order == ["root", "done", "late", "route"]


def test_unknown_reference_blocks_the_sort() -> None:
    bounds, diagnostics = _bounds(seq("root", step("a", reads=("ghost",)), succeed("done")))
    a = [field("root"), node("root"), field("children"), index(0), node("a")]
    assert bounds is None
    assert _found(diagnostics) == [("cyclic_reference", a, ["a"]), ("undefined_read", a, ["ghost"])]


# --- folds --------------------------------------------------------------------------------


def test_fold_counts_executions_concurrency_and_loop_entries() -> None:
    root = seq(
        "root",
        par("fan", map_("each", loop("retry", step("work", attempts=3), 4), 5), step("peer")),
        succeed("done"),
    )
    bounds, diagnostics = _bounds(root)
    assert diagnostics == [] and bounds is not None
    assert (bounds.max_node_executions, bounds.peak_concurrency) == (21, 6)
    assert bounds.termination.to_wire() == {
        "kind": "bounded",
        "maxIterations": 20,
        "ranking": [["retry"]],
    }
    assert bounds.attempts_per_node == {"peer": 1, "work": 3}


def test_a_graph_of_terminals_still_has_positive_bounds() -> None:
    bounds, _ = _bounds(succeed("done"))
    assert bounds is not None
    assert (bounds.max_node_executions, bounds.peak_concurrency) == (1, 1)
    assert bounds.attempts_per_node == {}


# --- ceilings -----------------------------------------------------------------------------

ROOT_CHILD = [field("root"), node("root"), field("children"), index(0)]


@pytest.mark.parametrize(
    ("child", "name", "where"),
    [
        (loop("spin", step("work"), 101), "spin", "maxIterations"),
        (step("work", attempts=101), "work", "attempts"),
    ],
)
def test_per_node_limits(child: dict[str, Any], name: str, where: str) -> None:
    bounds, diagnostics = _bounds(seq("root", child, succeed("done")))
    assert bounds is None
    assert _found(diagnostics) == [
        ("ceiling_exceeded", [*ROOT_CHILD, node(name), field(where)], [name])
    ]


def test_map_item_limit_also_bounds_concurrency() -> None:
    bounds, diagnostics = _bounds(seq("root", map_("each", step("work"), 1025), succeed("done")))
    where = [*ROOT_CHILD, node("each"), field("maxItems")]
    assert bounds is None
    assert _found(diagnostics) == [
        ("ceiling_exceeded", where, ["each"]),  # maxItems 1025 > 1024
        ("ceiling_exceeded", where, []),  # 1025 concurrent items > 1024
    ]
    assert diagnostics[1].message.startswith("peak concurrency")


def test_nested_maps_exceed_the_execution_ceiling_at_the_outer_map() -> None:
    root = seq("root", map_("outer", map_("inner", step("work"), 1000), 100), succeed("done"))
    bounds, diagnostics = _bounds(root)
    assert bounds is None
    assert _found(diagnostics) == [
        ("ceiling_exceeded", [*ROOT_CHILD, node("outer"), field("maxItems")], [])
    ]
    assert diagnostics[0].message.startswith("node executions")


def test_parallel_maps_exceed_the_concurrency_ceiling_at_the_par() -> None:
    root = par("fan", map_("left", step("a"), 1000), map_("right", step("b"), 1000))
    _, diagnostics = _bounds(root)
    assert _found(diagnostics) == [
        ("ceiling_exceeded", [field("root"), node("fan"), field("branches")], [])
    ]
    assert diagnostics[0].message.startswith("peak concurrency")


def test_nested_loops_exceed_the_loop_entry_ceiling() -> None:
    root = loop("a", loop("b", loop("c", succeed("done"), 100), 100), 100)
    _, diagnostics = _bounds(root)
    assert _found(diagnostics) == [
        ("ceiling_exceeded", [field("root"), node("a"), field("maxIterations")], [])
    ]
    assert diagnostics[0].message.startswith("loop entries")


def test_two_ceilings_at_one_field_sort_as_the_reference() -> None:
    _, diagnostics = _bounds(loop("spin", map_("each", step("work"), 1000), 1000))
    assert [d.message.split(" ")[0] for d in diagnostics] == ["maxIterations", "node"]


def test_depth_ceiling_is_reported_at_each_too_deep_node() -> None:
    root: dict[str, Any] = step("work")
    for level in range(64, 0, -1):
        root = seq(f"s{level}", root)
    _, diagnostics = _bounds(root)
    [finding] = diagnostics
    assert (finding.code, finding.path[-1], finding.related_nodes) == (
        "ceiling_exceeded",
        node("work"),
        ["work"],
    )
    assert len(finding.path) == 2 + 3 * 64


def test_node_and_guard_totals_are_reported_at_the_root() -> None:
    wide = [succeed(f"t{i}") for i in range(2049)]
    big_guard = {"kind": "all", "guards": [is_error("work")] * 4096}
    root = seq(
        "root",
        step("work"),
        choice("route", big_guard, succeed("done")),
        seq("left", *wide),
        seq("right", *[succeed(f"u{i}") for i in range(2049)]),
    )
    _, diagnostics = _bounds(root)
    guard_path = [
        field("root"),
        node("root"),
        field("children"),
        index(1),
        node("route"),
        field("branches"),
        index(0),
        field("when"),
    ]
    assert _found(diagnostics) == [
        ("ceiling_exceeded", [field("root")], []),
        ("ceiling_exceeded", [field("root")], []),
        ("ceiling_exceeded", guard_path, []),
    ]
    assert [d.message.split(" (")[0] for d in diagnostics[:2]] == [
        "total guard nodes",
        "total nodes",
    ]
