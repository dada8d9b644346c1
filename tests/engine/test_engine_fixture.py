"""``graph/positive/full-all-nodes.json`` submitted as it is, with python workers bound.

The fixture is a *wire-format* fixture: the reference uses it to check that every node
kind, guard and join parses, round-trips and matches ``graph.schema.json``
(``openengine-cluster-testkit`` ``graph_fixtures.rs`` and ``request-validation.test.js``),
and once as a ledger commit whose compiled IR comes from another fixture. The reference
never verifies or runs it, and its verifier would reject it: the graph breaks rules of
the contract (section 1) that the reference verifier enforces
(``graph_verifier/analyzer_bindings.rs``, ``analyzer_guards.rs``):

- ``work`` binds the input target ``text`` twice, the second time from an ``item``
  selector outside any map, leaves its required ``count``/``enabled``/``items`` unbound,
  and writes ``text`` from the out channel of a ``string`` output (no such field);
- ``verify`` takes a ``string`` input and every ``succeed`` builds a ``string`` output:
  bindings never build a whole non-record payload;
- ``choice5`` counts ``k_of_map`` over a verifier signal read as a ``group`` control of
  a node outside any map (an illegal control selector);
- ``choose`` ends the run on every path, so everything after it is unreachable, and the
  loop exits on ``verify``, which its body never runs.

So admission rejects it before any run exists, which is what this test asserts (the
runnable variant with the same node names is ``engine_graphs.every_kind_graph``, run by
``test_engine_nodes``). Nothing here is ours to fix: our verifier's codes and paths for
these causes are the reference's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_json
from engine_support import Workspace

from zeroshot_kernel.client import AdmissionRejected
from zeroshot_kernel.contract.graph import GraphSpec

FIXTURE = Path("fixtures") / "graph" / "positive" / "full-all-nodes.json"
INPUT = {"count": 1, "enabled": True, "items": ["a", "b"], "text": "hello"}
RUNTIME = {
    "harness": "python",
    "nodes": {
        "work": {"kind": "agent", "callable": "engine_workers:upper"},
        "verify": {"kind": "agent", "callable": "engine_workers:is_upper"},
    },
}
WORK = "root › children[0] › work"
CAUSES = {
    ("write_conflict", f"{WORK} › inputBindings[1] › target"),
    ("invalid_graph_shape", f"{WORK} › inputBindings[1] › value"),
    ("undefined_read", f"{WORK} › inputBindings"),
    ("schema_safety", f"{WORK} › writeBindings[0] › value"),
    ("schema_safety", "root › children[1] › verify › input"),
    ("schema_safety", "root › children[2] › choose › branches[0] › node › choice0 › output"),
    ("choice_exhaustiveness", "root › children[2] › choose › branches[5] › when"),
    ("reachability", "root › children[3] › joinAll"),
    ("loop_exit_satisfiability", "root › children[7] › repeat › until"),
}


def test_the_all_nodes_fixture_parses_but_is_rejected_before_any_run(
    conformance: Path, ws: Workspace
) -> None:
    document = load_json(conformance / FIXTURE)
    # Every node kind is read as is: the wire format round-trips exactly.
    assert GraphSpec.from_wire(document).to_wire() == document
    executables = {"work", "verify"}
    assert (
        {
            node.name
            for node in GraphSpec.from_wire(document).nodes()
            if node.kind in ("step", "verifier")
        }
        == executables
        == set(RUNTIME["nodes"])
    )

    with pytest.raises(AdmissionRejected) as rejected:
        ws.client.submit(conformance / FIXTURE, input=INPUT, runtime=RUNTIME, title="all nodes")

    found = {(d.code, d.readable_path()) for d in rejected.value.diagnostics}
    assert found >= CAUSES, sorted(CAUSES - found)
    # The graph alone is at fault: the runtime plan and the input pass their checks.
    assert all(
        d.severity == "error" and d.readable_path().startswith("root")
        for d in rejected.value.diagnostics
    )
    assert ws.client.runs() == []
    assert not (ws.root / ".zeroshot" / "controllers").exists()
