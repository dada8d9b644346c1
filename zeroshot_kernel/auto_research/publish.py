"""``zeroshot.git-delivery.push@1``: publish one reviewed auto-research round with git.

An accepted adoption becomes exactly one commit on the run's branch: the candidate's bytes,
restored from the research records and verified against its manifest, replace the task's
``candidate/`` folder in the run's worktree; the reviewer's title and description are the
commit message; the branch is pushed. Any other round is ``skipped``: nothing is committed.

A delivery retried after its controller died finds its commit by the trailers it wrote
and only pushes again, so no round is ever committed twice.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from zeroshot_kernel.auto_research.candidates import BytesCheck, restore_candidate
from zeroshot_kernel.auto_research.records import ResearchRecords
from zeroshot_kernel.auto_research.studies.catalog import records_for, study_of
from zeroshot_kernel.auto_research.task import CANDIDATE_DIR
from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.contract.outcome import VerifierOutcome, error
from zeroshot_kernel.delivery.harness import SIGNAL
from zeroshot_kernel.delivery.worktree import (
    PUBLISH_WORKTREES,
    DeliveryRefused,
    Remote,
    Repository,
    RunWorktree,
    check_reachable,
    open_repository,
    push_branch,
    push_remote,
    run_worktree,
)
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult

PUSH_NEEDS_GIT = "--push publishes accepted rounds with git"
"""Why a research run with ``--push`` refuses a workspace outside git."""

DeliverySignal = Literal["published", "skipped", "repair_requested"]


@dataclass(frozen=True)
class Delivered:
    signal: DeliverySignal
    detail: str
    receipt: dict[str, Any] | None = None


async def preflight(workspace: Path) -> Remote:
    """What a ``--push`` run needs before it starts: a repository with a commit and a
    reachable remote. Raises :class:`DeliveryRefused`."""
    repository = await open_repository(workspace, needed_for=PUSH_NEEDS_GIT)
    remote = await push_remote(repository)
    await check_reachable(repository, remote)
    return remote


async def deliver(
    *,
    workspace: Path,
    run_id: str,
    task: str,
    study: str,
    payload: dict[str, Any],
    log: Callable[[str], None],
) -> Delivered:
    """Publish ``payload`` (the deliver node's input: ``result``, ``title``,
    ``description``) when it is an accepted adoption. Raises :class:`DeliveryRefused`
    (the workspace cannot deliver) or :class:`GitError` (git failed unexpectedly)."""
    result = payload["result"]
    number, candidate = int(result["round"]), str(result["candidateId"])
    repository = await open_repository(workspace, needed_for=PUSH_NEEDS_GIT)
    worktree = await run_worktree(repository, workspace, run_id, folder=PUBLISH_WORKTREES)
    if result["disposition"] != "adopt":
        return Delivered(
            "skipped",
            f"round {number}: {result['disposition']}; nothing to publish, nothing committed",
        )
    remote = await push_remote(repository)
    folder = _task_folder(workspace, task, repository) / CANDIDATE_DIR
    trailers = {
        "Zeroshot-Run": run_id,
        "Zeroshot-Round": str(number),
        "Zeroshot-Candidate": candidate,
    }
    if not await _committed(worktree, trailers):
        problem = await asyncio.to_thread(
            _restore,
            records_for(workspace, study),
            candidate,
            str(result["candidateSha256"]),
            worktree.path / folder,
        )
        if problem:
            return Delivered("repair_requested", f"round {number}: {problem}")
        await worktree.git("add", "--all", "--force", "--", str(folder))
        title = payload["title"].strip() or f"Round {number}: adopt {candidate}"
        message = [
            title,
            payload["description"].strip(),
            "\n".join(f"{k}: {v}" for k, v in trailers.items()),
        ]
        await worktree.git(
            "commit",
            "-q",
            "--allow-empty",
            "--cleanup=whitespace",
            *(part for text in message if text for part in ("-m", text)),
        )
    head = await worktree.git("rev-parse", "HEAD")
    # guarded: a push never outlives its controller; a resumed delivery finds its commit
    # by the trailers and pushes again
    rejected = await push_branch(worktree, remote, guarded=True)
    if rejected:
        return Delivered(
            "repair_requested",
            f"round {number}: the remote refused the push of {worktree.branch}: {rejected}",
        )
    receipt = {
        "version": "v1",
        "repository": remote.display,
        "targetBranch": worktree.branch,
        "headRevision": head,
        "mode": "push",
        "outcome": "published",
        "round": number,
        "candidateId": candidate,
    }
    log("delivery receipt " + json.dumps(receipt, sort_keys=True))
    return Delivered(
        "published",
        f"round {number}: {candidate} published as {head[:12]} on {remote.name}/{worktree.branch}",
        receipt,
    )


def _task_folder(workspace: Path, task: str, repository: Repository) -> Path:
    """The task folder relative to the repository's top level."""
    path = Path(task) if Path(task).is_absolute() else workspace / task
    try:
        return path.resolve().relative_to(repository.root.resolve())
    except ValueError:
        raise DeliveryRefused(
            f"the task folder {path} is outside the repository "
            f"{repository.root}, so it cannot be published from it"
        ) from None


async def _committed(worktree: RunWorktree, trailers: dict[str, str]) -> bool:
    """Whether the branch head is this round's commit already (a retried delivery)."""
    body = await worktree.git("log", "-1", "--format=%B")
    lines = set(body.splitlines())
    return all(f"{key}: {value}" in lines for key, value in trailers.items())


def _restore(records: ResearchRecords, candidate: str, sha256: str, dest: Path) -> str:
    """Replace ``dest`` with the candidate's recorded bytes; a problem, or ``""``."""
    manifest = records.read_manifest(candidate)
    if manifest is None:
        return f"the records hold no candidate {candidate}"
    if manifest.content_sha256 != sha256:
        return (
            f"the reviewed result names content {sha256[:12]} but the records hold "
            f"{manifest.content_sha256[:12]} for {candidate}"
        )
    if dest.exists():
        shutil.rmtree(dest)
    check: BytesCheck = restore_candidate(records, candidate, dest)
    if not check.ok:
        return f"the restored bytes of {candidate} do not match: {', '.join(check.problems)}"
    return ""


async def deliver_node(request: ExecutionRequest) -> HarnessResult:
    """The ``deliver`` verifier of an auto-research run, served by the ``git_delivery``
    harness (which turns :class:`DeliveryRefused` and :class:`GitError` into outcomes)."""
    task = request.run_input.get("task") if isinstance(request.run_input, dict) else None
    if not isinstance(request.node, VerifierNode) or not isinstance(task, str):
        return HarnessResult(
            error("refusal"),
            "git delivery serves the deliver verifier of an auto-research run (input task)",
        )
    delivered = await deliver(
        workspace=request.workspace.resolve(),
        run_id=request.run_id,
        task=task,
        study=study_of(request.run_input),
        payload=request.input,
        log=lambda line: request.log("output", line),
    )
    outcome = VerifierOutcome(
        status="verifier", output=None, signals={SIGNAL: delivered.signal}, diagnostic=None
    )
    return HarnessResult(outcome, delivered.detail)
