"""Delivery of a ``software-change`` run: ``push``, ``pr`` (``builtin.git-delivery.pr@1``)
and ``ship`` (``builtin.git-delivery.merge@1``).

Delivery commits exactly the tree the trust check recorded (the snapshot the checks passed
on and the reviewers judged, see :mod:`~zeroshot_kernel.software_change.snapshot`), never
what the worktree holds now: ``commit-tree`` (plumbing, no hook, unsigned) with the base as
its only parent and the trailer ``Zeroshot-Run``; the run's branch and its worktree's index
move to that commit (``update-ref``, ``read-tree``: no file is touched). It pushes the
branch with hardened git (unless the remote already holds that commit: a delivery retried
after its controller died records the push that happened instead of repeating or denying
it), leased on what the remote's branch held, then reads the remote back: the branch must
point at the commit and no other ref may have moved since preparation (whoever moved it),
or the delivery is refused naming what moved. For ``pr``/``ship`` it opens or updates the
pull request through the GitHub REST API, takes review feedback on the exact head back into
the repair loop (unless feedback is off), waits for the required checks and a conflict-free
head, and for ``ship`` merges with a method the repository allows and confirms the merged
revision. A receipt certifies success only when every other execution of the run settled
before this delivery started; otherwise the signal is ``unconfirmed``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from zeroshot_kernel.delivery.git import NETWORK_TIMEOUT_S
from zeroshot_kernel.delivery.github import MERGE_METHODS, GitHub, GitHubError, Pull
from zeroshot_kernel.delivery.worktree import (
    DeliveryRefused,
    Remote,
    RunWorktree,
    ls_remote,
    push_branch,
)
from zeroshot_kernel.ledger.events import ExecutionVoided, NodeCompleted, NodeStarted, RunEvent
from zeroshot_kernel.software_change.trust import BRANCH_PREFIX, TRAILER, moved_refs

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


async def commit_reviewed(
    worktree: RunWorktree, tree: str, base: str, task: str, run_id: str
) -> str:
    """The delivery commit of ``tree`` on ``base`` (see the module doc): the branch's head
    when it is that commit already (a retried delivery), else a new one the branch and the
    worktree's index move to."""
    head = await worktree.git("rev-parse", "--verify", "-q", "HEAD", check=False)
    if head and head != base and await _is_delivery_of(worktree, head, tree, base, run_id):
        return head
    title = (task.strip().splitlines() or ["software change"])[0][:72]
    commit = await worktree.git(
        "commit-tree", "--no-gpg-sign", "-p", base, "-m", title, "-m", f"{TRAILER}: {run_id}", tree
    )
    await worktree.git("update-ref", f"refs/heads/{worktree.branch}", commit, head or base)
    await worktree.git("read-tree", commit)
    return commit


async def _is_delivery_of(
    worktree: RunWorktree, commit: str, tree: str, base: str, run_id: str
) -> bool:
    shown = await worktree.git("log", "-1", "--format=%T%x00%P%x00%B", commit, check=False)
    found_tree, _, rest = shown.partition("\0")
    parents, _, message = rest.partition("\0")
    return (
        found_tree == tree
        and parents.split() == [base]
        and f"{TRAILER}: {run_id}" in message.splitlines()
    )


async def push_reviewed(
    worktree: RunWorktree, remote: Remote, commit: str, trust: dict[str, Any], run_id: str
) -> tuple[str, bool]:
    """Push ``commit`` to the run's branch unless the remote holds it already, then read
    the remote back (see the module doc). Returns what the remote rejected (``""``) and
    whether a push was made."""
    ref = f"refs/heads/{worktree.branch}"
    before = await ls_remote(worktree.git, remote, ref, timeout=NETWORK_TIMEOUT_S)
    pushed = before.get(ref) != commit
    if pushed:
        rejected = await push_branch(
            worktree, remote, revision=commit, lease=before.get(ref, ""), guarded=True
        )
        if rejected:
            return rejected, True
    now = await ls_remote(worktree.git, remote, timeout=NETWORK_TIMEOUT_S)
    if now.get(ref) != commit:
        raise DeliveryRefused(
            f"the remote {remote.name} holds {ref} at {(now.get(ref) or 'nothing')[:12]} "
            f"after the push, not the delivered {commit[:12]}"
        )
    if trust.get("remoteRefsJson"):
        moved = moved_refs(
            json.loads(trust["remoteRefsJson"]),
            now,
            BRANCH_PREFIX + run_id,
            lambda sha: sha == commit,
        )
        if moved:
            raise DeliveryRefused("the remote moved during the run: " + "; ".join(moved))
    return "", pushed


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
    tree: str,
    trust: dict[str, Any],
    token: str,
    log: Callable[[str], None],
    github: Callable[[str, str, str], GitHub] | None = None,
) -> ChangeDelivered:
    """Commit ``tree``, push and (``pr``/``ship``) drive the pull request; see the
    module doc."""
    mode, base = delivery["mode"], delivery["baseRevision"]
    if not tree or tree == await worktree.git("rev-parse", f"{base}^{{tree}}"):
        raise DeliveryRefused(
            f"the change is empty: the reviewed tree is the base {base[:12]}'s, "
            "so there is nothing to deliver"
        )
    head = await commit_reviewed(worktree, tree, base, task, run_id)
    rejected, pushed = await push_reviewed(worktree, remote, head, trust, run_id)
    if not pushed:
        log(
            f"the remote {remote.name} already holds {worktree.branch} at {head[:12]}: "
            "recorded, not pushed again"
        )
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
