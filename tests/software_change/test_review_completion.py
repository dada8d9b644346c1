"""The completion gate as tables: facts and the decision each must get, then real runs'
ledgers (software changes in real repositories, scripted workers standing in for the agents)
and the decision their gate recorded. The first failing gate decides; missing proof stays
missing. Also the evidence receipts' fingerprints and staleness rules on a real git
checkout."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import software_change_support as support
from software_change_support import repository, script, start_change
from support import zeroshot as run_cli

from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.ledger.events import NodeCompleted
from zeroshot_kernel.sandbox import Containment
from zeroshot_kernel.software_change.prepare import prepare, submit_change
from zeroshot_kernel.software_change.review.checks import run_check as boxed_check
from zeroshot_kernel.software_change.review.classify import classify
from zeroshot_kernel.software_change.review.completion import (
    CompletionFacts,
    MicroEligibility,
    Requirement,
    Review,
    decide,
)
from zeroshot_kernel.software_change.review.ledger import latest_decision
from zeroshot_kernel.software_change.review.receipts import (
    EMPTY_SHA256,
    EvidenceReceipt,
    Invalidation,
    current,
    fingerprint,
    reusable,
    staleness,
)
from zeroshot_kernel.software_change.review.tiers import resolve_tier, review_tier
from zeroshot_kernel.software_change.snapshot import tree_of
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: real software-change runs in real git repositories
pytestmark = pytest.mark.slow

HEAD, TREE = "a" * 40, "b" * 40


def receipt(rid: str = "R1", **changes: Any) -> EvidenceReceipt:
    fields: dict[str, Any] = dict(
        id=rid,
        command="pytest",
        command_argv=["pytest"],
        cwd="/w",
        exit_code=0,
        started_at=0.0,
        finished_at=1.0,
        git_commit=HEAD,
        git_tree=TREE,
        working_tree_hash="w",
        dirty_tree_fingerprint=EMPTY_SHA256,
        environment={},
        environment_fingerprint="e",
        evidence_class="claim_establishing",
        requirement_ids=["REQ-001"],
        establishes=["tests pass"],
    )
    return EvidenceReceipt(**(fields | changes))


ROW = Requirement(
    id="REQ-001",
    authoritative_text="tests pass",
    status="verified",
    evidence_refs=["R1"],
    intended_acceptance_claims=["tests pass"],
)
REVIEW = Review(
    review_id="x1",
    reviewer_step_id="x1",
    verdict="approved",
    head=HEAD,
    base="",
    checkout="REVIEW_CHECKOUT_UNCHANGED",
    engine_authenticated=True,
)
MICRO = MicroEligibility(
    head=HEAD,
    tree=TREE,
    ratings={d: "low" for d in "abcdef"},
    coherent_slice=True,
    public_contract=False,
    hard_triggers=[],
    proof_refs=["R1"],
)
GOOD: dict[str, Any] = dict(
    tier="standard",
    candidate_head=HEAD,
    candidate_tree=TREE,
    owner_verified=True,
    requirements=[ROW],
    receipts=[receipt()],
    lifecycle_state="REVIEW_LIFECYCLE_COMPLETE",
    review=REVIEW,
)

TABLE: list[tuple[str, dict[str, Any], str, str]] = [
    ("complete", {}, "CANDIDATE_COMPLETE", "independent review approved"),
    (
        "not owner-verified beats everything",
        {"owner_verified": False, "requirements": []},
        "IMPLEMENTATION_COMPLETE",
        "not verified",
    ),
    (
        "environment blocked",
        {
            "requirements": [
                ROW,
                ROW.model_copy(update={"id": "REQ-002", "status": "blocked_by_environment"}),
            ]
        },
        "BLOCKED_BY_ENVIRONMENT",
        "REQ-002",
    ),
    (
        "no rows: missing proof stays missing",
        {"requirements": []},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "nothing is proven",
    ),
    (
        "missing proof, no review",
        {"requirements": [], "review_available": False},
        "PARTIALLY_VERIFIED",
        "nothing is proven",
    ),
    (
        "stale receipt",
        {"stale": {"R1": "git_tree_changed"}},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "stale receipt R1",
    ),
    (
        "diagnostic receipt",
        {"receipts": [receipt(evidence_class="diagnostic")]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "no valid claim-establishing",
    ),
    (
        "wrong tree",
        {"receipts": [receipt(git_tree="c" * 40)]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "no valid claim-establishing",
    ),
    (
        "failed command",
        {"receipts": [receipt(exit_code=1)]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "no valid claim-establishing",
    ),
    (
        "claim not established",
        {"receipts": [receipt(establishes=["other"])]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "not established",
    ),
    (
        "claim denied",
        {"receipts": [receipt(does_not_establish=["tests pass"])]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "not established",
    ),
    (
        "verified with unavailable proof",
        {"requirements": [ROW.model_copy(update={"unavailable_proof": ["hardware"]})]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "unavailable",
    ),
    (
        "unverified row",
        {"requirements": [ROW.model_copy(update={"status": "unverified"})]},
        "BLOCKED_BY_MISSING_EVIDENCE",
        "REQ-001: unverified",
    ),
    (
        "micro eligible",
        {"tier": "micro", "micro": MICRO, "review": None},
        "CANDIDATE_COMPLETE",
        "micro",
    ),
    (
        "micro without eligibility",
        {"tier": "micro", "review": None},
        "PARTIALLY_VERIFIED",
        "no eligibility record",
    ),
    (
        "micro with a medium",
        {
            "tier": "micro",
            "micro": MICRO.model_copy(update={"ratings": {**MICRO.ratings, "a": "medium"}}),
        },
        "PARTIALLY_VERIFIED",
        "six",
    ),
    (
        "review unavailable",
        {"review_available": False},
        "OWNER_VERIFIED_REVIEW_UNAVAILABLE",
        "no independent review",
    ),
    ("correction pending", {"correction_pending": True}, "REVIEW_PENDING", "correction"),
    ("high risk without obligations", {"tier": "high-risk"}, "REVIEW_PENDING", "obligations"),
    (
        "high risk needs integration scope",
        {"tier": "high-risk", "obligations_satisfied": True},
        "REVIEW_PENDING",
        "integration",
    ),
    (
        "high risk complete",
        {
            "tier": "high-risk",
            "obligations_satisfied": True,
            "review": REVIEW.model_copy(update={"scope": "integration"}),
        },
        "CANDIDATE_COMPLETE",
        "approved",
    ),
    ("no review", {"review": None}, "REVIEW_PENDING", "no independent review"),
    (
        "review of another head",
        {"review": REVIEW.model_copy(update={"head": "d" * 40})},
        "REVIEW_PENDING",
        "another head",
    ),
    (
        "checkout unverified",
        {"review": REVIEW.model_copy(update={"checkout": "REVIEW_CHECKOUT_UNVERIFIED"})},
        "REVIEW_PENDING",
        "checkout integrity",
    ),
    (
        "lifecycle open",
        {"lifecycle_state": "CORRECTION_RECHECK_REQUIRED"},
        "REVIEW_PENDING",
        "lifecycle",
    ),
    (
        "owner-recorded reviewer",
        {"review": REVIEW.model_copy(update={"engine_authenticated": False})},
        "OWNER_VERIFIED_REVIEW_UNAVAILABLE",
        "provenance",
    ),
]


@pytest.mark.parametrize(
    "changes, state, reason", [row[1:] for row in TABLE], ids=[row[0] for row in TABLE]
)
def test_completion_gate(changes: dict[str, Any], state: str, reason: str) -> None:
    decision = decide(CompletionFacts(**(GOOD | changes)))
    assert decision.state == state
    assert any(reason in r for r in decision.reasons), decision.reasons
    if state == "CANDIDATE_COMPLETE":
        assert decision.allowed_claims == ["tests pass"]
    else:
        assert decision.allowed_claims == []


@pytest.mark.parametrize(
    "ratings, triggers, expected",
    [
        (
            {
                d: "low"
                for d in (
                    "blast_radius",
                    "concurrency",
                    "security_data",
                    "boundary",
                    "novelty",
                    "observability",
                )
            },
            [],
            "micro",
        ),
        ({}, [], "standard"),  # unrated dimensions count as medium
        ({"novelty": "high"}, [], "high-risk"),
        ({}, ["auth_secrets_trust"], "high-risk"),
    ],
)
def test_auto_tier_is_decided_by_the_rules(
    ratings: dict[str, str], triggers: list[str], expected: str
) -> None:
    assert resolve_tier("auto", ratings, triggers) == expected
    assert resolve_tier("micro", {"novelty": "high"}) == "micro"
    with pytest.raises(ValueError):
        resolve_tier("huge")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def run_check(argv: list[str], cwd: Path, **claims: Any) -> EvidenceReceipt:
    """A check run boxed on the tree of ``cwd``'s HEAD (as the gates run them)."""
    return boxed_check(argv, cwd, tree=tree_of(cwd, "HEAD"), containment=Containment(), **claims)


def test_receipts_fingerprints_and_staleness(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "config", "user.email", "a@b.invalid")
    _git(tmp_path, "config", "user.name", "A")
    (tmp_path / "a.py").write_text("x = 1\n")
    notebook: dict[str, Any] = {
        "cells": [
            {"cell_type": "code", "source": ["print(1)"], "outputs": [], "execution_count": None}
        ],
        "metadata": {},
    }
    (tmp_path / "n.ipynb").write_text(json.dumps(notebook))
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "start")
    clean = fingerprint(tmp_path)
    assert clean.dirty_tree_fingerprint == EMPTY_SHA256
    made = run_check(
        ["true"], tmp_path, receipt_id="R1", requirement_ids=["REQ-001"], establishes=["ok"]
    )
    assert made.evidence_class == "claim_establishing" and made.exit_code == 0
    assert staleness(made, current(tmp_path)) is None
    assert reusable(made, ["true"], str(tmp_path))
    assert not reusable(made.model_copy(update={"final_gate": True}), ["true"], str(tmp_path))
    assert run_check(["true"], tmp_path, receipt_id="R0").evidence_class == "diagnostic"
    # re-running the notebook (outputs, counts) leaves the fingerprint alone
    notebook["cells"][0] |= {
        "outputs": [{"output_type": "stream", "text": "1"}],
        "execution_count": 3,
    }
    (tmp_path / "n.ipynb").write_text(json.dumps(notebook))
    assert staleness(made, current(tmp_path)) is None
    (tmp_path / "a.py").write_text("x = 2\n")
    assert staleness(made, current(tmp_path)) == "dirty_fingerprint_changed"
    _git(tmp_path, "commit", "-qam", "change")
    assert staleness(made, current(tmp_path)) == "git_tree_changed"
    assert (
        staleness(made, current(tmp_path).model_copy(update={"environment_fingerprint": "other"}))
        == "environment_changed"
    )
    assert (
        staleness(made, current(tmp_path), [Invalidation(receipt_id="R1", reason="flaky")])
        == "invalidated: flaky"
    )
    printed = run_check(["sh", "-c", "echo out; echo err >&2; exit 3"], tmp_path, receipt_id="R3")
    assert printed.exit_code == 3 and printed.output_tail == "out\nerr\n"
    chatty = run_check(
        ["python3", "-c", "print('x' * 100_000); print('the end')"], tmp_path, receipt_id="R4"
    )
    assert chatty.output_tail.startswith("[zeroshot: earlier output not kept]\n")
    assert chatty.output_tail.endswith("x\nthe end\n") and len(chatty.output_tail) < 4200
    slow = run_check(["sleep", "30"], tmp_path, receipt_id="R5", timeout_s=0.5)
    assert slow.exit_code == 124 and "no exit within 0.5 s" in slow.output_tail
    missing = run_check(["no-such-program-here"], tmp_path, receipt_id="R6")
    assert missing.exit_code == 127 and "cannot start" in missing.output_tail
    with_inputs = run_check(["true"], tmp_path, receipt_id="R2", inputs=["a.py"])
    assert staleness(with_inputs, current(tmp_path, ["a.py"])) is None
    (tmp_path / "a.py").write_text("x = 3\n")
    assert staleness(with_inputs, current(tmp_path, ["a.py"])) == "input_digest_changed: a.py"


@pytest.mark.parametrize(
    ("tier", "scripted", "checks", "decision"),
    [
        pytest.param(
            "standard",
            {},
            ("true",),
            "CANDIDATE_COMPLETE (independent review approved the exact head)",
            id="standard-approved",
        ),
        pytest.param(
            "standard",
            {"code.touch": True},
            ("true",),
            "REVIEW_PENDING (checkout integrity: REVIEW_CHECKOUT_CHANGED)",
            id="reviewer-changed-the-checkout",
        ),
        pytest.param("standard", {}, (), "BLOCKED_BY_MISSING_EVIDENCE", id="no-evidence"),
        pytest.param(
            "micro",
            {},
            ("true",),
            "PARTIALLY_VERIFIED (micro: no eligibility record)",
            id="micro-unclassified",
        ),
        pytest.param(
            "auto",
            {},
            ("true",),
            "CANDIDATE_COMPLETE (micro: eligible, owner proof on the exact head)",
            id="auto-micro-eligible",
        ),
        pytest.param(
            "high-risk",
            {},
            ("true",),
            "CANDIDATE_COMPLETE (independent review approved the exact head)",
            id="high-risk-final-review-approved",
        ),
        pytest.param(
            "high-risk",
            {"integration_review.touch": True},
            ("true",),
            "REVIEW_PENDING (checkout integrity: REVIEW_CHECKOUT_CHANGED)",
            id="final-reviewer-changed-the-checkout",
        ),
    ],
)
def test_the_decision_recorded_in_a_real_runs_ledger(
    tmp_path: Path, tier: str, scripted: dict[str, Any], checks: tuple[str, ...], decision: str
) -> None:
    repo, _ = repository(tmp_path)
    script(repo, scripted)
    change = start_change(repo, delivery="none", tier=tier, checks=checks)
    change.wait()
    shown = run_cli(
        repo, "status", change.run.id, "--ledger", str(repo / ".zeroshot" / "ledger.db")
    )
    assert shown.returncode == 0, shown.stderr
    assert f"completion: {decision}" in shown.stdout, shown.stdout


# --- runs recorded before "profile" was renamed "tier" -----------------------------------


def test_the_review_record_names_its_tier_either_way() -> None:
    assert review_tier({"tier": "micro", "seam": "main", "checks": []}) == "micro"
    assert review_tier({"profile": "high-risk", "seam": "main", "checks": []}) == "high-risk"
    assert review_tier({"tier": "standard", "profile": "micro"}) == "standard"  # tier first
    for broken in ({"seam": "main"}, {"profile": "auto"}, {"tier": "huge"}):
        with pytest.raises((KeyError, ValueError)):
            review_tier(broken)


def _before_the_rename(document: Any) -> Any:
    """``document`` (a graph or run input) with the review record's ``tier`` named
    ``profile``, as the template wrote both before the rename."""
    if isinstance(document, dict):
        return {
            ("profile" if key == "tier" else key): _before_the_rename(value)
            for key, value in document.items()
        }
    if isinstance(document, list):
        return [_before_the_rename(value) for value in document]
    return document


@pytest.mark.parametrize(
    ("tier", "decision"),
    [
        pytest.param(
            "auto",
            "CANDIDATE_COMPLETE (micro: eligible, owner proof on the exact head)",
            id="micro-classified",
        ),
        pytest.param(
            "micro", "PARTIALLY_VERIFIED (micro: no eligibility record)", id="micro-unclassified"
        ),
        pytest.param(
            "high-risk",
            "CANDIDATE_COMPLETE (independent review approved the exact head)",
            id="high-risk-final-gate",
        ),
    ],
)
def test_a_run_recorded_with_the_old_profile_key_is_judged_the_same(
    tmp_path: Path, tier: str, decision: str
) -> None:
    """The graph and input of a run recorded before the rename carry ``review.profile``;
    its gates (review and final) read the tier from it and record the same decision as
    for ``review.tier``; ``status --json`` names it ``tier``."""
    repo, _ = repository(tmp_path)
    task = "Add a line to change.txt"
    client = Client(str(repo / ".zeroshot" / "ledger.db"), workspace=str(repo))
    classification = None
    if tier == "auto":
        with support.workers_importable():
            found = classify(
                client, task, runtime=support.CLASSIFIER_RUNTIME, timeout_s=support.RUN_TIMEOUT_S
            )
        tier, classification = found.tier, found.to_input()
    prepared = asyncio.run(prepare(repo, "none"))
    expansion = expand_template(
        "software-change",
        TemplateOptions(
            task=task,
            harness="claude",
            delivery="none",
            tier=tier,
            checks=("true",),
            classification=classification,
        ),
    )
    graph, run_input = _before_the_rename(expansion.graph), _before_the_rename(expansion.input)
    assert run_input["review"]["profile"] == tier and "tier" not in run_input["review"]
    with support.workers_importable():
        run = submit_change(
            client,
            prepared,
            graph=graph,
            input=run_input,
            runtime=support.test_nodes(expansion.runtime),
            title=f"software-change: {task}",
        )
    run.wait(support.RUN_TIMEOUT_S)
    assert client.ledger.admitted(run.id)["initialInput"]["review"]["profile"] == tier
    ledger = str(repo / ".zeroshot" / "ledger.db")
    shown = run_cli(repo, "status", run.id, "--ledger", ledger)
    assert shown.returncode == 0, shown.stderr
    assert f"completion: {decision}" in shown.stdout, shown.stdout
    review = json.loads(run_cli(repo, "status", run.id, "--json", "--ledger", ledger).stdout)[
        "review"
    ]
    assert review["tier"] == tier and "profile" not in review
    # a gate that recorded its record before the rename (``profile``) reads as ``tier``
    events = [_record_before_the_rename(event) for _, event in run.events()]
    old = latest_decision(client.ledger.admitted(run.id)["graph"], events)
    assert old is not None and old["tier"] == tier and "profile" not in old


def _record_before_the_rename(event: Any) -> Any:
    if (
        not isinstance(event, NodeCompleted)
        or not isinstance(event.completion.outcome, VerifierOutcome)
        or not isinstance(event.completion.outcome.diagnostic, dict)
        or "tier" not in event.completion.outcome.diagnostic.get("recordJson", "")
    ):
        return event
    diagnostic = dict(event.completion.outcome.diagnostic)
    record = json.loads(diagnostic["recordJson"])
    diagnostic["recordJson"] = json.dumps(_before_the_rename(record))
    outcome = event.completion.outcome.model_copy(update={"diagnostic": diagnostic})
    return event.model_copy(
        update={"completion": event.completion.model_copy(update={"outcome": outcome})}
    )
