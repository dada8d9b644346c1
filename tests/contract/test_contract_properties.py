"""Property tests: round trips, identity invariance, and parse robustness."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import load_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import graphs, with_bounds

from zeroshot_kernel.contract.canonical import graph_identity
from zeroshot_kernel.contract.parse import parse_compiled_ir, parse_graph

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sorted_labels(document: Any) -> Any:
    """The wire form after parsing: label sets come back sorted."""
    if isinstance(document, list):
        return [_sorted_labels(v) for v in document]
    if not isinstance(document, dict):
        return document
    out = {k: _sorted_labels(v) for k, v in document.items()}
    if document.get("kind") == "enum" or document.get("kind") in ("in", "k_of_n", "k_of_map"):
        key = "values" if document.get("kind") == "enum" else "labels"
        out[key] = sorted(out[key])
    if "signals" in document and isinstance(document["signals"], dict):
        out["signals"] = {k: sorted(v) for k, v in document["signals"].items()}
    if document.get("kind") in ("choice",) and "otherwise" not in document:
        out["otherwise"] = None
    return out


@pytest.mark.slow  # hypothesis: hundreds of generated graphs
@SETTINGS
@given(graphs())
def test_generated_graphs_round_trip(document: dict[str, Any]) -> None:
    result = parse_graph(document)
    assert result.value is not None, result.diagnostics
    wire = result.value.to_wire()
    assert wire == _sorted_labels(document)
    assert parse_graph(wire).value == result.value


def _shuffle_sets(node: Any, rng: random.Random) -> Any:
    """Reorder every set-like collection and duplicate promoted paths."""
    if isinstance(node, list):
        return [_shuffle_sets(v, rng) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _shuffle_sets(v, rng) for k, v in node.items()}
    for key in ("inputBindings", "writeBindings", "bindings", "labels"):
        if isinstance(out.get(key), list):
            rng.shuffle(out[key])
    if out.get("kind") == "enum":
        rng.shuffle(out["values"])
    if isinstance(out.get("promotedStatePaths"), list) and out["promotedStatePaths"]:
        out["promotedStatePaths"].append(copy.deepcopy(rng.choice(out["promotedStatePaths"])))
        rng.shuffle(out["promotedStatePaths"])
    if out.get("kind") == "par":
        rng.shuffle(out["branches"])
    if out.get("kind") in ("all", "any") and "guards" in out:
        rng.shuffle(out["guards"])
        out["guards"].append(copy.deepcopy(out["guards"][0]))
    if out.get("kind") == "k_of_n":
        rng.shuffle(out["values"])
    return out


def _identity(document: dict[str, Any]) -> str:
    result = parse_compiled_ir(document)
    assert result.value is not None, result.diagnostics
    return graph_identity(result.value)


@pytest.mark.slow  # hypothesis: hundreds of generated graphs
@SETTINGS
@given(graphs(), st.randoms(use_true_random=False))
def test_shuffling_set_like_collections_keeps_identity(
    document: dict[str, Any], rng: random.Random
) -> None:
    ir = with_bounds(document)
    assert _identity(_shuffle_sets(ir, rng)) == _identity(ir)


def _seqs(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("kind") == "seq":
            found.append(node)
        for value in node.values():
            found.extend(_seqs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_seqs(value))
    return found


def _workers(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if node.get("kind") in ("step", "verifier") else []
        return own + [w for v in node.values() for w in _workers(v)]
    if isinstance(node, list):
        return [w for v in node for w in _workers(v)]
    return []


@pytest.mark.slow  # hypothesis: hundreds of generated graphs
@SETTINGS
@given(graphs(), st.data())
def test_sequence_order_bound_and_worker_changes_change_identity(
    document: dict[str, Any], data: st.DataObject
) -> None:
    ir = with_bounds(document)
    base = _identity(ir)

    bumped = with_bounds(document, executions=2)
    assert _identity(bumped) != base

    for seq in _seqs(ir["root"]):
        children = seq["children"]
        if len(children) > 1 and json.dumps(children[0], sort_keys=True) != json.dumps(
            children[-1], sort_keys=True
        ):
            mutated = copy.deepcopy(ir)
            target = _seqs(mutated["root"])[_seqs(ir["root"]).index(seq)]
            target["children"].reverse()
            assert _identity(mutated) != base
            break

    executables = _workers(ir["root"])
    if executables:
        mutated = copy.deepcopy(ir)
        victim = data.draw(st.sampled_from(_workers(mutated["root"])))
        name, version = victim["worker"].rsplit("@", 1)
        victim["worker"] = f"{name}@{int(version) + 1}"
        assert _identity(mutated) != base


def _mutations(document: Any, rng: random.Random) -> Any:
    """Random structural damage: delete, retype or replace values anywhere."""
    if isinstance(document, dict) and document:
        out = dict(document)
        key = rng.choice(sorted(out))
        action = rng.randrange(5)
        if action == 0:
            del out[key]
        elif action == 1:
            out[key] = rng.choice([None, 0, -1, 1.5, "", "x@0", [], {}, True, "$.a", 2**60])
        elif action == 2:
            out[f"extra{rng.randrange(3)}"] = "value"
        else:
            out[key] = _mutations(out[key], rng)
        return out
    if isinstance(document, list) and document:
        out_list = list(document)
        position = rng.randrange(len(out_list))
        action = rng.randrange(3)
        if action == 0:
            del out_list[position]
        elif action == 1:
            out_list.append(copy.deepcopy(out_list[position]))
        else:
            out_list[position] = _mutations(out_list[position], rng)
        return out_list
    return rng.choice([None, "kind", 7, [], {"kind": "exec"}])


def _fixture_documents(conformance: Path) -> list[Any]:
    documents = [load_json(p) for p in (conformance / "fixtures/graph/positive").glob("*.json")]
    verifier = conformance / "fixtures/verifier"
    documents += [load_json(p)["graph"] for p in verifier.glob("*/*.json")]
    return documents


def test_random_mutations_only_ever_produce_diagnostics(conformance: Path) -> None:
    documents = _fixture_documents(conformance)

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(documents), st.randoms(use_true_random=False), st.integers(1, 4))
    def check(document: Any, rng: random.Random, rounds: int) -> None:
        mutated = document
        for _ in range(rounds):
            mutated = _mutations(mutated, rng)
        for parse in (parse_graph, parse_compiled_ir):
            result = parse(mutated)
            assert result.ok or result.diagnostics
            for diagnostic in result.diagnostics:
                assert diagnostic.code == "invalid_graph_shape" and diagnostic.message

    check()


def test_canonical_json_refuses_floats_and_fingerprints_ignore_the_key() -> None:
    import pytest

    from zeroshot_kernel.contract.canonical import (
        CanonicalError,
        dump_canonical,
        request_fingerprint,
    )

    with pytest.raises(CanonicalError):
        dump_canonical({"bounds": {"maxNodeExecutions": 1.5}})
    assert dump_canonical({"b": 1, "a": [True, None]}) == b'{"a":[true,null],"b":1}'
    params = {"graph": {"x": 1}, "idempotencyKey": "k1"}
    assert request_fingerprint("apply", params) == request_fingerprint(
        "apply", {**params, "idempotencyKey": "k2"}
    )
    assert request_fingerprint("apply", params) != request_fingerprint("plan", params)
