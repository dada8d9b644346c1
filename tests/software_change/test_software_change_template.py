"""The ``software-change`` template as users see it (``zeroshot template show``, ``zeroshot
change show``): an ordinary graph our verifier admits for every delivery mode and
review tier, with the review limits as graph bounds, the coding agents on claude by default,
the trusted delivery and gate bound by the template; and runs of the micro and high-risk
shapes, and ``zeroshot status`` showing the recorded completion decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from software_change_support import git, repository, script, start_change
from support import zeroshot

from zeroshot_kernel.admission.admit import admit
from zeroshot_kernel.contract.documents import node_documents
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult
from zeroshot_kernel.software_change.template import DELIVERY_MODES, loop_bound
from zeroshot_kernel.templates import TemplateOptions, expand_template, template_names

# slow: real runs of the template and zeroshot processes
pytestmark = pytest.mark.slow


def by_name(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["name"]: node for node in node_documents(graph["root"])}


def test_template_show_prints_an_admissible_graph(tmp_path: Path) -> None:
    assert "software-change" in template_names()
    done = zeroshot(tmp_path, "template", "show", "software-change", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    admission = admit(
        document["graph"], initial_input=document["input"], runtime=document["runtime"]
    )
    assert admission.admitted is not None, admission.diagnostics
    named = by_name(document["graph"])
    assert named["deliver"]["worker"] == "builtin.git-delivery.pr@1"
    assert document["runtime"]["nodes"]["deliver"] == {
        "kind": "git_delivery",
        "connections": ["github"],
    }
    assert document["runtime"]["harness"] == "claude"
    assert document["runtime"]["model"] == "claude-sonnet-5"
    listed = zeroshot(tmp_path, "template", "list")
    assert "software-change" in listed.stdout
    outline = zeroshot(tmp_path, "change", "show", "--delivery", "ship", "--tier", "high-risk")
    assert outline.returncode == 0, outline.stderr
    assert "builtin.git-delivery.merge@1" in outline.stdout
    assert "loop final_reviews  (at most 2 iterations)" in outline.stdout


@pytest.mark.parametrize("tier", ["micro", "standard", "high-risk"])
@pytest.mark.parametrize("delivery", DELIVERY_MODES)
def test_every_mode_and_tier_is_admitted(delivery: str, tier: str) -> None:
    expansion = expand_template(
        "software-change", TemplateOptions(task="t", harness="claude", delivery=delivery, tier=tier)
    )
    admission = admit(expansion.graph, initial_input=expansion.input, runtime=expansion.runtime)
    assert admission.admitted is not None, admission.diagnostics
    named = by_name(expansion.graph)
    assert expansion.input["review"]["tier"] == tier and "profile" not in expansion.input["review"]
    assert named["change_loop"]["maxIterations"] == loop_bound(tier)
    assert ("code" in named) == (tier != "micro")
    assert ("integration_review" in named) == (tier == "high-risk")
    if tier == "high-risk":
        assert named["final_reviews"]["maxIterations"] == 2
    assert ("deliver" in named) == (delivery != "none")
    reasons = {n["reason"] for n in named.values() if n["kind"] == "fail"}
    assert "blocked" in reasons
    if delivery != "none":
        assert "delivery_unconfirmed" in reasons
    assert ("approval_required" in reasons) == (delivery == "ship")
    gate = expansion.runtime["nodes"]["review_gate"]
    assert gate == {
        "kind": "agent",
        "harness": "python",
        "callable": "zeroshot_kernel.software_change.review.gate:review_gate",
    }


def test_harness_and_model_are_overridable() -> None:
    expansion = expand_template(
        "software-change",
        TemplateOptions(task="t", harness="codex", model="gpt-5.6", delivery="push"),
    )
    assert expansion.runtime["harness"] == "codex"
    assert expansion.runtime["model"] == "gpt-5.6"
    assert (
        admit(expansion.graph, initial_input=expansion.input, runtime=expansion.runtime).admitted
        is not None
    )


def test_a_micro_change_needs_only_owner_verification(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    change = start_change(repo, delivery="none", tier="micro", checks=("true",))
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    assert change.completions("code") == []
    assert change.signals("review_gate", "lifecycle") == ["approved"]


def test_high_risk_runs_early_and_final_reviews(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    script(repo, {"integration_review": ["rejected", "accepted"]})
    change = start_change(repo, delivery="push", tier="high-risk")
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    head = result.output["receipt"]["headRevision"]
    assert git(remote, "show", f"{head}:change.txt").splitlines() == [
        "worker 1",
        "early_correction 1",
        "final_correction 1",
    ]
    assert change.signals("integration_review", "verdict") == ["rejected", "accepted"]


def test_a_change_rejected_twice_then_accepted_is_delivered_after_the_restart(
    tmp_path: Path,
) -> None:
    """The code reviewer rejects, rejects the recheck (the one strategy restart), then
    accepts: the remote, the user's checkout and the ledger agree, and status says so."""
    repo, remote = repository(tmp_path)
    script(repo, {"code": ["rejected", "rejected", "accepted"]})
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    assert change.signals("code", "verdict") == ["rejected", "rejected", "accepted"]
    assert change.signals("review_gate", "lifecycle") == ["correction", "restart", "approved"]
    head = result.output["receipt"]["headRevision"]
    assert git(remote, "rev-parse", f"zeroshot/{change.run.id}") == head
    assert git(repo, "status", "--porcelain") == ""
    done = zeroshot(
        repo, "status", change.run.id, "--ledger", str(repo / ".zeroshot" / "ledger.db")
    )
    assert "completion: CANDIDATE_COMPLETE" in done.stdout, done.stdout
    assert "1 strategy restart(s)" in done.stdout, done.stdout


def test_two_failed_final_reviews_block_a_high_risk_run(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    script(repo, {"integration_review": ["rejected", "rejected"]})
    change = start_change(repo, delivery="push", tier="high-risk")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "blocked"
    assert len(change.completions("integration_review")) == 2
    assert git(remote, "branch", "--list", "zeroshot/*") == ""


def test_status_shows_the_recorded_completion_decision(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    script(repo, {"code": ["rejected", "accepted"]})
    change = start_change(repo, delivery="none", checks=("test -f change.txt", "true"))
    assert isinstance(change.wait(), SucceededResult)
    done = zeroshot(
        repo, "status", change.run.id, "--ledger", str(repo / ".zeroshot" / "ledger.db")
    )
    assert done.returncode == 0, done.stderr
    # the checks' receipts cover the evidence, the engine ran the reviewer, and the tree it
    # reviewed (recorded before it started) is the tree the gate sees
    assert (
        "completion: CANDIDATE_COMPLETE (independent review approved the exact head)" in done.stdout
    ), done.stdout
    assert (
        "review:  seam main REVIEW_LIFECYCLE_COMPLETE, cycle 1, 1 review(s), "
        "1 recheck(s), 0 strategy restart(s)" in done.stdout
    ), done.stdout
    checks = [line.strip() for line in done.stdout.splitlines() if "check:" in line]
    assert [line.split(" (receipt ")[0] for line in checks] == [
        "check:   test -f change.txt -> exit 0",
        "check:   true -> exit 0",
    ], done.stdout
    as_json = zeroshot(
        repo, "status", change.run.id, "--json", "--ledger", str(repo / ".zeroshot" / "ledger.db")
    )
    review = json.loads(as_json.stdout)["review"]
    assert review["tier"] == "standard" and "profile" not in review
    assert review["decision"]["state"] == "CANDIDATE_COMPLETE"
    assert review["lifecycle"]["counters"]["strategyRestarts"] == 0
    assert [(r["command"], r["exitCode"]) for r in review["receipts"]] == [
        ("test -f change.txt", 0),
        ("true", 0),
    ]
