"""``--tier auto``: a read-only classifier run proposes ratings, the rules choose the
review tier, and the classification reaches the change run, where it is a micro change's
eligibility record. Real git repositories, real controllers; the classifier and the coding
agents are scripted python workers standing in for the LLM agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from software_change_support import (
    CLASSIFIER_RUNTIME,
    repository,
    script,
    start_change,
    workers_importable,
)
from support import zeroshot

from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult
from zeroshot_kernel.software_change.classifier_graph import classifier_graph
from zeroshot_kernel.software_change.review.classify import ClassificationFailed, classify

# slow: real software-change runs in real git repositories
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("scripted", "tier"),
    [
        ({}, "micro"),
        ({"ratings": {"novelty": "medium"}}, "standard"),
        ({"publicContract": True}, "standard"),
        ({"coherentSlice": False}, "standard"),
        ({"ratings": {"concurrency": "high"}}, "high-risk"),
        ({"hardTriggers": ["auth_secrets_trust"]}, "high-risk"),
    ],
)
def test_the_rules_choose_the_tier_from_the_classifiers_ratings(
    tmp_path: Path, scripted: dict[str, Any], tier: str
) -> None:
    repo, _ = repository(tmp_path)
    script(repo, {"classify": scripted})
    client = Client(str(repo / ".zeroshot" / "ledger.db"), workspace=str(repo))
    with workers_importable():
        found = classify(
            client, "Rename a local variable", runtime=CLASSIFIER_RUNTIME, timeout_s=120
        )
    assert found.tier == tier
    assert found.hard_triggers == scripted.get("hardTriggers", [])
    (summary,) = client.runs()
    assert summary.run_id == found.run_id
    assert summary.title == "software-change classification: Rename a local variable"
    assert (
        client.ledger.admitted(found.run_id)["graph"]["root"]["children"][0]["name"] == "classify"
    )


def test_a_failing_classifier_stops_before_any_change(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    client = Client(str(repo / ".zeroshot" / "ledger.db"), workspace=str(repo))
    broken = {
        "harness": "python",
        "nodes": {"classify": {"kind": "agent", "callable": "change_workers:write"}},
    }  # not a verdict
    with pytest.raises(ClassificationFailed, match="classifier_failed"), workers_importable():
        classify(client, "Anything", runtime=broken, timeout_s=120)
    assert len(client.runs()) == 1
    assert not (repo / ".zeroshot" / "worktrees").exists()


def test_an_auto_micro_change_carries_its_classification(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    change = start_change(repo, delivery="none", tier="auto", checks=("true",))
    assert isinstance(change.wait(), SucceededResult)
    review = change.client.ledger.admitted(change.run.id)["initialInput"]["review"]
    assert review["tier"] == "micro" and "profile" not in review
    assert review["classification"]["ratings"] == dict.fromkeys(
        ("blast_radius", "boundary", "concurrency", "novelty", "observability", "security_data"),
        "low",
    )
    (classifier,) = [r for r in change.client.runs() if r.run_id != change.run.id]
    assert review["classification"]["run"] == classifier.run_id


def test_an_auto_change_with_a_medium_rating_runs_the_standard_review(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    script(repo, {"classify": {"ratings": {"blast_radius": "medium"}}})
    change = start_change(repo, delivery="none", tier="auto")
    assert isinstance(change.wait(), SucceededResult)
    assert len(change.completions("code")) == 1  # the independent seam review ran
    assert (
        change.client.ledger.admitted(change.run.id)["initialInput"]["review"]["tier"] == "standard"
    )


def test_change_show_prints_the_classifier_graph_for_auto(tmp_path: Path) -> None:
    shown = zeroshot(tmp_path, "change", "show", "--tier", "auto")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == [
        "seq classification",
        "  verifier classify  (builtin.agent.change-classifier@1)",
    ]
    assert shown.stderr == ""
    # --profile, the tier's old name: hidden, still works, one deprecation line on stderr
    old = zeroshot(tmp_path, "change", "show", "--profile", "auto")
    assert old.returncode == 0, old.stderr
    assert old.stdout == shown.stdout
    assert old.stderr.strip().splitlines() == [
        "note: `zeroshot change show --profile` is deprecated; use --tier"
    ]
    assert classifier_graph()["root"]["name"] == "classification"
    for command in (["show"], ["run", "a task"]):  # an unknown tier is refused alike
        unknown = zeroshot(tmp_path, "change", *command, "--tier", "nope")
        assert unknown.returncode == 2
        assert unknown.stderr.strip() == (
            "error: unknown review tier 'nope'; choose one of micro, standard, high-risk, auto"
        )
