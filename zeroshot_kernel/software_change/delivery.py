"""Delivery of a ``software-change`` run: ``push``, ``pr`` (``builtin.git-delivery.pr@1``)
and ``ship`` (``builtin.git-delivery.merge@1``).

The run works in its own worktree on ``zeroshot/<run-id>``; delivery commits exactly the
files the change touched relative to the base (never ``.zeroshot/``, new build output left
out, secret-looking files refused), pushes the branch (unless the remote already holds
that head: a delivery retried after its controller died records the push that happened
instead of repeating or denying it), and for ``pr``/``ship`` opens or
updates the pull request through the GitHub REST API, takes review feedback on the exact
head back into the repair loop (unless feedback is off), waits for the required checks and
a conflict-free head, and for ``ship`` merges with a method the repository allows and
confirms the merged revision. A receipt certifies success only when every other execution
of the run settled before this delivery started; otherwise the signal is ``unconfirmed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from zeroshot_kernel.delivery.git import NETWORK_TIMEOUT_S
from zeroshot_kernel.delivery.github import MERGE_METHODS, GitHub, GitHubError, Pull
from zeroshot_kernel.delivery.worktree import DeliveryRefused, Remote, RunWorktree, push_branch
from zeroshot_kernel.ledger.events import ExecutionVoided, NodeCompleted, NodeStarted, RunEvent
from zeroshot_kernel.software_change.trust import touched

GOOD_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
DEFAULT_POLL_S = 10
DEFAULT_CHECKS_TIMEOUT_S = 3600


@dataclass(frozen=True)
class ChangeDelivered:
    signal: str
    message: str
    receipt: dict[str, Any] = field(default_factory=dict)


def unsettled(events: Sequence[RunEvent], execution: str) -> list[str]:
    """Executions (other than ``execution``) that had not settled when it started."""
    open_: dict[str, str] = {}
    for event in events:
        if isinstance(event, NodeStarted):
            if event.reference.execution == execution:
                return sorted(open_.values())
            open_[event.reference.execution] = event.reference.node
        elif isinstance(event, NodeCompleted):
            open_.pop(event.completion.reference.execution, None)
        elif isinstance(event, ExecutionVoided):
            open_.pop(event.reference.execution, None)
    return sorted(open_.values())


async def commit_changes(worktree: RunWorktree, task: str, run_id: str, base: str) -> None:
    """Commit exactly the files the change touched relative to ``base`` (nothing when there
    are none); refuses secret-looking files. Whatever else is staged is unstaged first."""
    found = await asyncio.to_thread(touched, worktree.path, base)
    if found.secrets:
        raise DeliveryRefused(
            "refusing to deliver secret-looking file(s): " + ", ".join(found.secrets)
        )
    await worktree.git("reset", "-q")
    for start in range(0, len(found.paths), 200):
        await worktree.git(
            "add", "--all", "--", *(f":(literal){p}" for p in found.paths[start : start + 200])
        )
    if not await worktree.git("diff", "--cached", "--name-only"):
        return
    title = (task.strip().splitlines() or ["software change"])[0][:72]
    await worktree.git("commit", "-q", "-m", title, "-m", f"Zeroshot-Run: {run_id}")


async def remote_head(worktree: RunWorktree, remote: Remote) -> str:
    """The run's branch on the remote (``""`` when absent)."""
    listed = await worktree.git(
        "ls-remote",
        "--heads",
        remote.name,
        f"refs/heads/{worktree.branch}",
        timeout=NETWORK_TIMEOUT_S,
    )
    return listed.split()[0] if listed else ""


def receipt(
    delivery: dict[str, Any], repository: str, head: str, number: int, mode: str, outcome: str
) -> dict[str, Any]:
    return {
        "version": "v1",
        "repository": repository,
        "targetBranch": delivery["targetBranch"],
        "headRevision": head,
        "pullRequestId": number,
        "mode": mode,
        "outcome": outcome,
    }


async def deliver_change(
    *,
    worktree: RunWorktree,
    remote: Remote,
    run_id: str,
    task: str,
    delivery: dict[str, Any],
    token: str,
    log: Callable[[str], None],
    github: Callable[[str, str, str], GitHub] | None = None,
) -> ChangeDelivered:
    """Commit, push and (``pr``/``ship``) drive the pull request; see the module doc."""
    mode = delivery["mode"]
    await commit_changes(worktree, task, run_id, delivery["baseRevision"])
    head = await worktree.git("rev-parse", "HEAD")
    if head == delivery["baseRevision"]:
        raise DeliveryRefused(
            "the change is empty: the run's branch is still at its base "
            f"{head[:12]}, so there is nothing to deliver"
        )
    if await remote_head(worktree, remote) == head:
        log(
            f"the remote {remote.name} already holds {worktree.branch} at {head[:12]}: "
            "recorded, not pushed again"
        )
        rejected = ""
    else:
        rejected = await push_branch(worktree, remote, force_with_lease=True, guarded=True)
    slug = delivery.get("repository") or remote.display
    if rejected:
        return ChangeDelivered(
            "rejected" if mode == "push" else "conflict",
            f"the remote refused the push of {worktree.branch}: {rejected}",
            receipt(delivery, slug, head, 0, mode, "rejected"),
        )
    if mode == "push":
        log(f"pushed {head[:12]} to {remote.name}/{worktree.branch}")
        return ChangeDelivered(
            "published", "", receipt(delivery, slug, head, 0, "push", "published")
        )
    if not token:
        raise DeliveryRefused("pull request delivery needs the github connection: set GH_TOKEN")
    if not delivery.get("repository"):
        raise DeliveryRefused(f"the remote {remote.display} does not name a GitHub repository")
    make = github or (lambda repo, tok, url: GitHub(repo, tok, api_url=url))
    client = make(delivery["repository"], token, delivery.get("apiUrl") or "https://api.github.com")
    try:
        return await _pull_request(client, worktree, head, task, delivery, log)
    except GitHubError as failure:
        raise DeliveryRefused(str(failure)) from None
    finally:
        await client.close()


async def _pull_request(
    client: GitHub,
    worktree: RunWorktree,
    head: str,
    task: str,
    delivery: dict[str, Any],
    log: Callable[[str], None],
) -> ChangeDelivered:
    mode, base = delivery["mode"], delivery["targetBranch"]
    title = (task.strip().splitlines() or ["software change"])[0][:72]
    body = f"{task.strip()}\n\nDelivered by zeroshot from `{worktree.branch}`."
    found = await client.find_pull(worktree.branch, base)
    if found is None:
        pull = await client.open_pull(worktree.branch, base, title, body)
        log(f"opened pull request #{pull.number}")
    else:
        pull = await client.update_pull(found.number, title, body)
        log(f"updated pull request #{pull.number}")
    wire_mode = "merge" if mode == "ship" else "pr"

    def answer(
        signal: str, message: str, outcome: str | None = None, revision: str = head
    ) -> ChangeDelivered:
        return ChangeDelivered(
            signal,
            message,
            receipt(
                delivery,
                delivery["repository"],
                revision,
                pull.number,
                wire_mode,
                outcome or signal,
            ),
        )

    protection = await client.protection(base)
    poll = float(delivery.get("pollSeconds", DEFAULT_POLL_S))
    deadline = asyncio.get_running_loop().time() + float(
        delivery.get("checksTimeoutSeconds", DEFAULT_CHECKS_TIMEOUT_S)
    )
    while True:
        pull = await client.pull(pull.number)
        if delivery.get("feedback", True):
            feedback = await _feedback(client, pull, head)
            if feedback:
                return answer("feedback", feedback)
        if pull.mergeable is False or pull.mergeable_state == "dirty":
            return answer(
                "conflict",
                f"pull request #{pull.number} conflicts with {base}: "
                f"merge or rebase onto {base} and resolve it",
            )
        state, detail = await _checks(client, head, protection)
        if state == "failed":
            return answer("ci_failed", f"required checks failed on {head[:12]}: {detail}")
        if state == "passed" and pull.mergeable is True:
            break
        if asyncio.get_running_loop().time() > deadline:
            return answer("ci_failed", f"required checks did not finish in time: {detail}")
        log(f"waiting: checks {state}{', ' + detail if detail else ''}, mergeable {pull.mergeable}")
        await asyncio.sleep(poll)
    if mode == "pr":
        return answer("opened", "")
    return await _ship(client, pull, head, protection, answer, log)


async def _feedback(client: GitHub, pull: Pull, head: str) -> str:
    """Visible review feedback on the exact head: changes requested, and line comments."""
    reviews = [
        r
        for r in await client.reviews(pull.number)
        if r.get("commit_id") == head and r.get("state") == "CHANGES_REQUESTED"
    ]
    if not reviews:
        return ""
    comments = [c for c in await client.review_comments(pull.number) if c.get("commit_id") == head]
    parts = [
        f"{r.get('user', {}).get('login', 'reviewer')}: {r.get('body', '').strip()}"
        for r in reviews
    ]
    parts += [f"{c.get('path')}:{c.get('line')}: {c.get('body', '').strip()}" for c in comments]
    return f"pull request #{pull.number} review requested changes:\n" + "\n".join(parts)


async def _checks(client: GitHub, head: str, protection: dict[str, Any]) -> tuple[str, str]:
    """``passed``, ``pending`` or ``failed`` for the required checks on ``head``."""
    required_spec = protection.get("required_status_checks") or {}
    required = set(required_spec.get("contexts") or [])
    required |= {c["context"] for c in required_spec.get("checks") or []}
    runs = {run["name"]: run for run in await client.check_runs(head)}
    failed = sorted(
        n
        for n, r in runs.items()
        if r.get("status") == "completed"
        and r.get("conclusion") not in GOOD_CONCLUSIONS
        and n in required
    )
    if failed:
        return "failed", ", ".join(failed)
    pending = sorted(n for n in required if n not in runs or runs[n].get("status") != "completed")
    if pending:
        return "pending", ", ".join(pending)
    return "passed", ""


async def _ship(
    client: GitHub,
    pull: Pull,
    head: str,
    protection: dict[str, Any],
    answer: Callable[..., ChangeDelivered],
    log: Callable[[str], None],
) -> ChangeDelivered:
    needed = int(
        (protection.get("required_pull_request_reviews") or {}).get(
            "required_approving_review_count", 0
        )
    )
    latest: dict[str, str] = {}
    for review in await client.reviews(pull.number):
        latest[str(review.get("user", {}).get("login"))] = str(review.get("state"))
    approvals = sum(state == "APPROVED" for state in latest.values())
    if approvals < needed:
        return answer(
            "approval_required",
            f"pull request #{pull.number} needs {needed} approving review(s), has {approvals}",
        )
    repo = await client.repo()
    allowed = [
        m
        for m in MERGE_METHODS
        if repo.get(f"allow_{m}_merge" if m != "merge" else "allow_merge_commit", m == "merge")
    ]
    if not allowed:
        raise DeliveryRefused(f"the repository {client.repository} allows no merge method")
    try:
        merged = await client.merge(pull.number, head, allowed[0])
    except GitHubError as failure:
        text = str(failure).lower()
        if failure.status == 405 and ("review" in text or "approv" in text):
            return answer("approval_required", str(failure))
        if failure.status in (405, 409):
            return answer("conflict", str(failure))
        raise
    confirmed = await client.pull(pull.number)
    revision = str(merged.get("sha", ""))
    if not (merged.get("merged") and confirmed.merged and revision):
        raise DeliveryRefused(f"pull request #{pull.number}: the merge was not confirmed")
    log(f"merged pull request #{pull.number} ({allowed[0]}) as {revision[:12]}")
    return answer("merged", "", "merged", revision)
