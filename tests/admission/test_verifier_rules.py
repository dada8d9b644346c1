"""Focused rules of the structural verifier that the conformance fixtures cover thinly,
plus determinism and robustness under random graph mutations."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_files, fixture_params, load_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import graphs

from zeroshot_kernel.admission.admit import verify_document
from zeroshot_kernel.admission.verifier import structural_diagnostics
from zeroshot_kernel.admission.worker_registry import FileRegistry
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic, sorted_diagnostics
from zeroshot_kernel.contract.parse import parse_graph

# --- small graph builders (wire form) ---------------------------------------------------

INT = {"kind": "integer"}
NULL = {"kind": "null"}
VALUE_IN = {"kind": "record", "fields": {"value": {"type": INT, "required": True}}}
RESULT_OUT = {"kind": "record", "fields": {"result": {"type": INT, "required": True}}}
STATE = {
    "kind": "record",
    "fields": {
        "value": {"type": INT, "required": True},
        "result": {"type": {"kind": "number"}, "required": False},
        "items": {"type": {"kind": "array", "items": VALUE_IN}, "required": True},
    },
}
ERRORS = ["timeout", "crash", "malformed", "refusal"]


def step(name: str, **fields: Any) -> dict[str, Any]:
    node = {
        "kind": "step",
        "name": name,
        "worker": "fixture.worker@1",
        "input": NULL,
        "output": RESULT_OUT,
        "inputBindings": [],
        "writeBindings": [],
        "timeoutMs": 1,
        "attempts": 1,
    }
    return {**node, **fields}


def verifier(name: str, **fields: Any) -> dict[str, Any]:
    signals = {"verdict": ["accepted", "rejected"]}
    return {**step(name, kind="verifier", signals=signals, diagnostic=NULL), **fields}


def succeed(name: str = "done") -> dict[str, Any]:
    return {"kind": "succeed", "name": name, "output": NULL, "bindings": []}


def fail(name: str = "failed") -> dict[str, Any]:
    return {"kind": "fail", "name": name, "reason": "rejected"}


def group(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "state": STATE, "promotedStatePaths": [], **fields}


def seq(name: str, *children: dict[str, Any]) -> dict[str, Any]:
    return group("seq", name, children=list(children))


def choice(
    name: str,
    branches: list[tuple[dict[str, Any], dict[str, Any]]],
    otherwise: dict[str, Any] | None,
) -> dict[str, Any]:
    return group(
        "choice",
        name,
        otherwise=otherwise,
        branches=[{"when": when, "node": node} for when, node in branches],
    )


def signal(name: str, *labels: str) -> dict[str, Any]:
    return {
        "kind": "in",
        "value": {"name": name, "source": "signal", "field": "verdict"},
        "labels": list(labels),
    }


def error(name: str, *labels: str) -> dict[str, Any]:
    return {
        "kind": "in",
        "value": {"name": name, "source": "error", "field": None},
        "labels": list(labels or ERRORS),
    }


def graph(root: dict[str, Any], profile: str = "openengine.graph.full/v1") -> dict[str, Any]:
    return {
        "profile": profile,
        "initialInput": STATE,
        "policy": {"policy": "policy.strict@1", "default": "deny"},
        "root": root,
    }


def verify(document: dict[str, Any]) -> list[GraphDiagnostic]:
    parsed = parse_graph(document)
    assert parsed.value is not None, [d.message for d in parsed.diagnostics]
    return structural_diagnostics(parsed.value)


def found(diagnostics: list[GraphDiagnostic]) -> list[tuple[str, str, list[str]]]:
    return [(d.code, _path(d), d.related_nodes) for d in diagnostics]


def _path(diagnostic: GraphDiagnostic) -> str:
    parts = []
    for segment in diagnostic.path:
        wire = segment.to_wire()
        parts.append(str(wire.get("name", wire.get("index"))))
    return "/".join(parts)


def routed(
    check: str,
    *branches: tuple[dict[str, Any], dict[str, Any]],
    otherwise: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """root = seq[verifier check, choice decision over ``branches``]."""
    return graph(seq("root", verifier(check), choice("decision", list(branches), otherwise)))


DECISION = "root/root/children/1/decision"


# --- choices: first-true order ------------------------------------------------------------


def test_a_branch_covered_by_earlier_branches_is_dead() -> None:
    document = routed(
        "check",
        (signal("check", "accepted", "rejected"), succeed()),
        (signal("check", "accepted"), succeed("again")),
        otherwise=fail(),
    )
    assert found(verify(document)) == [
        ("choice_exhaustiveness", f"{DECISION}/branches/1/when", ["decision"]),
    ]


def test_the_same_branches_in_the_other_order_are_both_live() -> None:
    document = routed(
        "check",
        (signal("check", "accepted"), succeed("again")),
        (signal("check", "accepted", "rejected"), succeed()),
        otherwise=fail(),
    )
    assert verify(document) == []


def test_branches_that_leave_errors_unrouted_are_not_exhaustive() -> None:
    document = routed("check", (signal("check", "accepted", "rejected"), succeed()))
    assert found(verify(document)) == [
        ("reachability", "root", ["root"]),
        ("choice_exhaustiveness", f"{DECISION}/branches", ["decision"]),
    ]


def test_routing_every_label_and_error_needs_no_otherwise() -> None:
    document = routed(
        "check", (error("check"), fail()), (signal("check", "accepted", "rejected"), succeed())
    )
    assert verify(document) == []


def test_a_signal_of_a_step_is_an_illegal_selector() -> None:
    document = graph(
        seq(
            "root",
            step("work"),
            choice("decision", [(signal("work", "accepted"), succeed())], fail()),
        )
    )
    assert ("choice_exhaustiveness", f"{DECISION}/branches/0/when", ["work"]) in found(
        verify(document)
    )


def test_labels_outside_the_domain_are_reported_at_labels() -> None:
    document = routed("check", (signal("check", "maybe"), succeed()), otherwise=fail())
    assert found(verify(document)) == [
        ("choice_exhaustiveness", f"{DECISION}/branches/0/when/labels", ["check"]),
    ]


def test_guard_reading_a_node_that_has_not_run_is_an_undefined_read() -> None:
    document = graph(
        seq(
            "root",
            choice("decision", [(signal("later", "accepted"), succeed())], fail()),
            verifier("later"),
        )
    )
    codes = found(verify(document))
    assert ("undefined_read", "root/root/children/0/decision/branches/0/when", ["later"]) in codes


# --- k_of_n and k_of_map ------------------------------------------------------------------


def test_k_of_n_count_above_its_selectors() -> None:
    when = {
        "kind": "k_of_n",
        "count": 3,
        "labels": ["accepted"],
        "values": [signal("check")["value"], signal("check")["value"]],
    }
    document = routed("check", (when, succeed()), otherwise=fail())
    assert ("choice_exhaustiveness", f"{DECISION}/branches/0/when/count", []) in found(
        verify(document)
    )


def _mapped(when: dict[str, Any], max_items: int = 2) -> dict[str, Any]:
    body = verifier("mapVerify")
    mapped = group(
        "map", "map", body=body, maxItems=max_items, over={"source": "state", "path": ["items"]}
    )
    return graph(seq("root", mapped, choice("decision", [(when, succeed())], fail())))


def k_of_map(count: int, name: str = "mapVerify") -> dict[str, Any]:
    return {
        "kind": "k_of_map",
        "count": count,
        "labels": ["accepted"],
        "value": {"name": name, "source": "signal", "field": "verdict"},
    }


def test_k_of_map_count_up_to_max_items_is_fine() -> None:
    assert verify(_mapped(k_of_map(2))) == []


def test_k_of_map_count_above_max_items_can_never_hold() -> None:
    assert found(verify(_mapped(k_of_map(3)))) == [
        ("choice_exhaustiveness", f"{DECISION}/branches/0/when/count", ["mapVerify"]),
    ]


def test_k_of_map_over_a_node_outside_any_map() -> None:
    document = routed("check", (k_of_map(1, "check"), succeed()), otherwise=fail())
    assert found(verify(document)) == [
        ("choice_exhaustiveness", f"{DECISION}/branches/0/when/value", ["check"]),
    ]


# --- loop exits -----------------------------------------------------------------------------


def _loop(body: dict[str, Any], until: dict[str, Any]) -> dict[str, Any]:
    repeat = group("loop", "repeat", body=body, until=until, maxIterations=3)
    return graph(seq("root", repeat, succeed()))


UNTIL = "root/root/children/0/repeat/until"


def test_until_on_a_verifier_of_every_iteration_is_fine() -> None:
    assert verify(_loop(verifier("check"), signal("check", "accepted"))) == []


def test_until_on_a_verifier_run_only_on_some_iterations() -> None:
    route = choice("route", [(error("work"), step("recover"))], verifier("check"))
    body = seq("body", step("work"), route)
    diagnostics = found(verify(_loop(body, signal("check", "accepted"))))
    assert ("loop_exit_satisfiability", UNTIL, ["check", "repeat"]) in diagnostics
    assert ("undefined_read", UNTIL, ["check"]) in diagnostics


def test_until_on_a_step_is_not_a_verifier() -> None:
    diagnostics = found(verify(_loop(step("work"), error("work", "timeout"))))
    assert diagnostics == [("loop_exit_satisfiability", UNTIL, ["repeat", "work"])]


def test_until_that_can_never_hold() -> None:
    until = {"kind": "all", "guards": [signal("check", "accepted"), signal("check", "rejected")]}
    assert found(verify(_loop(verifier("check"), until))) == [
        ("loop_exit_satisfiability", UNTIL, ["repeat"]),
    ]


# --- bindings -------------------------------------------------------------------------------

NESTED_IN = {"kind": "record", "fields": {"a": {"type": VALUE_IN, "required": True}}}


def test_overlapping_input_binding_targets() -> None:
    bindings = [
        {"target": ["a"], "value": {"source": "state", "path": ["items"]}},
        {"target": ["a", "value"], "value": {"source": "state", "path": ["value"]}},
    ]
    work = step("work", input=NESTED_IN, inputBindings=bindings)
    diagnostics = found(verify(graph(seq("root", work, succeed()))))
    work_path = "root/root/children/0/work"
    assert ("write_conflict", f"{work_path}/inputBindings/1/target", []) in diagnostics
    assert ("schema_safety", f"{work_path}/inputBindings/0", []) in diagnostics


def test_overlapping_write_targets() -> None:
    out = {"node": "work", "channel": "out", "path": ["result"]}
    writes = [{"target": ["result"], "value": out}, {"target": ["result"], "value": out}]
    document = graph(seq("root", step("work", writeBindings=writes), succeed()))
    assert found(verify(document)) == [
        ("write_conflict", "root/root/children/0/work/writeBindings/1/target", ["work"]),
    ]


def test_required_input_field_must_be_bound() -> None:
    document = graph(seq("root", step("work", input=VALUE_IN), succeed()))
    assert found(verify(document)) == [
        ("undefined_read", "root/root/children/0/work/inputBindings", []),
    ]


def test_item_selector_outside_a_map() -> None:
    bindings = [{"target": ["value"], "value": {"source": "item", "path": ["value"]}}]
    document = graph(seq("root", step("work", input=VALUE_IN, inputBindings=bindings), succeed()))
    assert found(verify(document)) == [
        ("invalid_graph_shape", "root/root/children/0/work/inputBindings/0/value", []),
    ]


def test_item_selector_inside_a_map_body() -> None:
    bindings = [{"target": ["value"], "value": {"source": "item", "path": ["value"]}}]
    body = step("work", input=VALUE_IN, inputBindings=bindings)
    mapped = group("map", "map", body=body, maxItems=2, over={"source": "state", "path": ["items"]})
    assert verify(graph(seq("root", mapped, succeed()))) == []


# --- reachability and shape -----------------------------------------------------------------


def test_a_node_after_an_unconditional_terminal_is_unreachable() -> None:
    document = graph(seq("root", fail(), step("work"), succeed()))
    assert found(verify(document)) == [
        ("reachability", "root/root/children/1/work", ["root", "work"]),
        ("reachability", "root/root/children/2/done", ["done", "root"]),
    ]


def _contradicting(second: tuple[str, str]) -> dict[str, Any]:
    """A sequence whose first choice completes only when ``check`` accepted, then an
    unrelated choice, then one that completes only on ``second``; then ``done``."""
    return graph(
        seq(
            "root",
            verifier("check"),
            verifier("other"),
            seq(
                "work",
                choice("first", [(signal("check", "accepted"), step("a"))], fail("f1")),
                choice("middle", [(signal("other", "accepted"), step("b"))], step("c")),
                choice("second", [(signal(*second), step("d"))], fail("f2")),
            ),
            succeed(),
        )
    )


@pytest.mark.parametrize(
    ("second", "unreachable"),
    [(("check", "rejected"), True), (("check", "accepted"), False), (("other", "accepted"), False)],
)
def test_a_sequence_whose_children_need_contradicting_outcomes_never_completes(
    second: tuple[str, str], unreachable: bool
) -> None:
    """The last child's condition contradicts the first's across an unrelated one: the
    sequence is decided as it grows, and a late conjunct must join the early one."""
    expected = [("reachability", "root/root/children/3/done", ["done", "root"])]
    assert found(verify(_contradicting(second))) == (expected if unreachable else [])


def test_only_the_full_profile_is_executable() -> None:
    document = graph(step("work"), profile="openengine.graph.single-worker/v1")
    assert ("invalid_graph_shape", "profile", []) in found(verify(document))


def test_wide_routing_hits_the_assignment_ceiling() -> None:
    """3^9 assignments exceed the ceiling: reported, not enumerated (time is measured in
    bench/b3, never asserted here)."""
    checks = [verifier(f"check{i}", signals={"verdict": ["a", "b", "c"]}) for i in range(9)]
    when = {
        "kind": "all",
        "guards": [
            {
                "kind": "in",
                "labels": ["a"],
                "value": {"name": f"check{i}", "source": "signal", "field": "verdict"},
            }
            for i in range(9)
        ],
    }
    document = graph(seq("root", *checks, choice("decision", [(when, succeed())], fail())))
    diagnostics = found(verify(document))
    assert diagnostics == [("ceiling_exceeded", "root/root/children/9/decision/branches", [])]


def _joined_groups(count: int) -> dict[str, Any]:
    """``count`` single-branch pars, then a choice reading every ``joined`` control: the
    choice has exactly 2**count control assignments."""
    pars = [
        group("par", f"group{i}", branches=[step(f"groupWork{i}")], join={"kind": "all"})
        for i in range(count)
    ]
    when = {
        "kind": "all",
        "guards": [
            {
                "kind": "in",
                "labels": ["reached"],
                "value": {"name": f"group{i}", "source": "group", "field": "joined"},
            }
            for i in range(count)
        ],
    }
    return graph(seq("root", *pars, choice("decision", [(when, succeed())], None)))


def test_assignment_ceiling_is_inclusive() -> None:
    # Each par joins whenever its step completes, so "all reached" is the only outcome.
    assert verify(_joined_groups(16)) == []
    # Past the ceiling the choice is undecidable: reported, and treated as able to fall through.
    assert found(verify(_joined_groups(17))) == [
        ("reachability", "root", ["root"]),
        ("ceiling_exceeded", "root/root/children/17/decision/branches", []),
    ]


# --- determinism and robustness -----------------------------------------------------------

# Listed at collection, read only by tests that take the ``conformance`` fixture: when the
# directory is missing they skip loudly (and fail under ZEROSHOT_STRICT=1).
FIXTURES = fixture_files("verifier/positive") + fixture_files("verifier/negative")


def _wire(diagnostics: list[GraphDiagnostic]) -> list[dict[str, Any]]:
    return [d.to_wire() for d in diagnostics]


@pytest.mark.parametrize(
    "path", fixture_params("verifier/positive") + fixture_params("verifier/negative")
)
def test_same_graph_gives_identical_diagnostics(conformance: Path, path: Path) -> None:
    document = load_json(path)["graph"]
    first = _wire(verify(document))
    assert _wire(verify(copy.deepcopy(document))) == first


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found_nodes = [node]
    for key in ("children", "branches"):
        for child in node.get(key, []):
            found_nodes += _nodes(child["node"] if "when" in child else child)
    for key in ("body", "otherwise"):
        if isinstance(node.get(key), dict):
            found_nodes += _nodes(node[key])
    return found_nodes


def _label_sets(value: Any) -> list[list[str]]:
    if isinstance(value, dict):
        own = [value["labels"]] if isinstance(value.get("labels"), list) else []
        return own + [s for v in value.values() for s in _label_sets(v)]
    if isinstance(value, list):
        return [s for v in value for s in _label_sets(v)]
    return []


def _mutate(document: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    mutated = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 3))):
        nodes = _nodes(mutated["root"])
        target = data.draw(st.sampled_from(nodes))
        lists = [key for key in ("children", "branches") if len(target.get(key, [])) > 0]
        labels = _label_sets(mutated["root"])
        action = data.draw(st.sampled_from(["delete", "duplicate", "swap", "rename", "unbind"]))
        if action in ("delete", "duplicate") and lists:
            entries = target[data.draw(st.sampled_from(lists))]
            position = data.draw(st.integers(0, len(entries) - 1))
            if action == "delete":
                del entries[position]
            else:
                entries.insert(position, copy.deepcopy(entries[position]))
        elif action == "swap" and len(labels) >= 2:
            left, right = data.draw(
                st.lists(st.sampled_from(range(len(labels))), min_size=2, max_size=2)
            )
            labels[left][:], labels[right][:] = list(labels[right]), list(labels[left])
        elif action == "rename":
            target["name"] = data.draw(st.sampled_from([n["name"] for n in nodes]))
        elif action == "unbind":
            for key in ("inputBindings", "writeBindings", "bindings"):
                if target.get(key):
                    target[key].pop(data.draw(st.integers(0, len(target[key]) - 1)))
    return mutated


def _verified_bytes(document: Any, conformance: Path) -> bytes:
    """Everything verification answers (parse, every pass, bounds, registry, IR, identity)
    as canonical bytes."""
    registry = FileRegistry.load(conformance.parent / "verifier-fixture-registry.json")
    envelope = verify_document(document, registry).envelope()
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_fixture_graphs_never_raise(conformance: Path, data: st.DataObject) -> None:
    """Whole verification of a mutated fixture answers with an envelope, never an exception,
    and the same document gives the same bytes again."""
    path = data.draw(st.sampled_from(FIXTURES))
    document = _mutate(load_json(path)["graph"], data)
    first = _verified_bytes(document, conformance)
    envelope = json.loads(first)
    assert envelope["status"] in ("verified", "rejected")
    assert (envelope["status"] == "rejected") == bool(envelope["diagnostics"])
    if envelope["diagnostics"]:
        parsed = [GraphDiagnostic.model_validate(d) for d in envelope["diagnostics"]]
        assert parsed == sorted_diagnostics(parsed)
    assert _verified_bytes(copy.deepcopy(document), conformance) == first


@pytest.mark.slow  # hypothesis: many random graphs
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=graphs())
def test_random_graphs_never_raise(conformance: Path, document: dict[str, Any]) -> None:
    first = _verified_bytes(document, conformance)
    assert json.loads(first)["status"] in ("verified", "rejected")
    assert _verified_bytes(copy.deepcopy(document), conformance) == first
