"""Trusted verification of a software-change run before anything is delivered.

At preparation (before any agent runs) :func:`baseline` records what the run must find
unchanged: the base revision, the repository's refs (tags and branches other than the
managed ``zeroshot/*`` ones), its local git config, the push remote's refs, and the
user's own checkout (HEAD, index, tracked and untracked files' status). The record goes
into the run input (``trust``), so it sits in the ledger (where no box writes) and a
resumed run checks the same thing.

:func:`verify` compares the run's worktree, the repository, the remote and the user's
checkout with that record; any difference is a violation named in one line. The
``trust_check`` node (trusted code, before delivery in every mode) also refuses an empty
change and secret-looking files, refuses a worktree whose snapshot
(:mod:`~zeroshot_kernel.software_change.snapshot`) is no longer the tree the last review
gate recorded (``changed after review: <paths>``), records that tree for delivery, and
gates publishing on the completion decision unless the user allowed an unproven delivery.

Every movement of the remote during the run is a violation, whoever made it and whatever
it points to (a commit pushed from a private clone that this repository never saw
included), except the run's own branch standing at a head this run's delivery recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from zeroshot_kernel.delivery.git import Credentials, push_credentials, run_git, user_settings
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.software_change import quoting, snapshot
from zeroshot_kernel.software_change.secrets import refusal

TRUST_WORKER = "zeroshot.delivery.trust@1"
TRUST_CALLABLE = "zeroshot_kernel.software_change.trust:trust_check"
TRUST_VERSION = "v1"
BRANCH_PREFIX = "refs/heads/zeroshot/"
RUN_DIR = ".zeroshot"
TRAILER = "Zeroshot-Run"
GATED = ("push", "pr", "ship")
PROVEN = "CANDIDATE_COMPLETE"


class TrustError(Refused):
    """git could not answer a question the check needs."""


def _git(cwd: Path, *args: str, check: bool = True, credentials: Credentials | None = None) -> str:
    try:
        done = run_git(cwd, *args, timeout=120, credentials=credentials)
    except subprocess.TimeoutExpired:
        raise TrustError(f"git {' '.join(args[:2])} did not answer in {cwd}") from None
    if done.returncode != 0:
        if not check:
            return ""
        raise TrustError(
            f"git {' '.join(args[:2])} failed in {cwd}: "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    return done.stdout.decode(errors="replace")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


# --- what is recorded -------------------------------------------------------------------


def checkout_parts(root: Path) -> dict[str, str]:
    """The user's checkout as the run can see it: HEAD, index, the files' status (tracked
    and untracked, ``.zeroshot/`` left out) and the content of tracked changes."""
    head = _git(root, "symbolic-ref", "-q", "HEAD", check=False).strip()
    revision = _git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).strip()
    spec = ["--", ".", f":(exclude){RUN_DIR}"]
    status = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", *spec)
    diff = _git(root, "diff", "--no-ext-diff", "--no-textconv", "--binary", *spec)
    return {
        "userHead": f"{head or '(detached)'} {revision}",
        "userIndex": _digest(_git(root, "ls-files", "-s", "-z")),
        "userFiles": _digest(status, diff),
    }


def local_refs(root: Path) -> dict[str, str]:
    """Branches, tags and other refs, without the managed ``zeroshot/*`` branches and the
    remote-tracking refs (fetches move those; pushes are checked on the remote)."""
    listed = _git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    refs = {}
    for line in listed.splitlines():
        name, _, sha = line.partition(" ")
        if name and not name.startswith((BRANCH_PREFIX, "refs/remotes/", "refs/stash")):
            refs[name] = sha
    return refs


def config_digests(root: Path) -> dict[str, str]:
    """The repository's local config, each value digested (URLs may carry secrets)."""
    listed = _git(root, "config", "--local", "--null", "--list", check=False)
    found: dict[str, list[str]] = {}
    for item in listed.split("\0"):
        if item:
            key, _, value = item.partition("\n")
            found.setdefault(key, []).append(value)
    return {key: _digest(*values)[:16] for key, values in sorted(found.items())}


def remote_refs(root: Path, remote: str, token: str = "") -> dict[str, str] | None:
    """The remote's branches and tags, or ``None`` when it cannot be read (``token``: a
    ``GH_TOKEN`` for an HTTPS remote; else the user's own credential helpers)."""
    if not remote:
        return None
    url = _git(root, "remote", "get-url", remote, check=False).strip()
    access = push_credentials(url, token, user_settings(root).helpers)
    try:
        listed = _git(
            root,
            "ls-remote",
            "--heads",
            "--tags",
            "--upload-pack=git-upload-pack",
            remote,
            credentials=access,
        )
    except TrustError:
        return None
    refs: dict[str, str] = {}
    for line in listed.splitlines():
        sha, _, name = line.partition("\t")
        if name:
            refs[name] = sha
    return refs


def baseline(
    root: Path, *, base: str, mode: str, remote: str, allow_unproven: bool = False
) -> dict[str, Any]:
    """The ``trust`` record of the run input, taken before any agent runs."""
    remote_now = remote_refs(root, remote, os.environ.get("GH_TOKEN", ""))
    return {
        "version": TRUST_VERSION,
        "mode": mode,
        "baseRevision": base,
        "allowUnproven": allow_unproven,
        "remote": remote,
        "remoteRefsJson": "" if remote_now is None else json.dumps(remote_now, sort_keys=True),
        "refsJson": json.dumps(local_refs(root), sort_keys=True),
        "configJson": json.dumps(config_digests(root), sort_keys=True),
        **checkout_parts(root),
    }


def placeholder(mode: str) -> dict[str, Any]:
    """What ``template show`` prints before a repository is prepared (never trusted)."""
    return {
        "version": "unprepared",
        "mode": mode,
        "baseRevision": "0" * 40,
        "allowUnproven": False,
        "remote": "",
        "remoteRefsJson": "",
        "refsJson": "{}",
        "configJson": "{}",
        "userHead": "",
        "userIndex": "",
        "userFiles": "",
    }


# --- what is checked --------------------------------------------------------------------


def main_checkout(worktree: Path) -> Path:
    """The user's checkout: the repository's main worktree."""
    listed = _git(worktree, "worktree", "list", "--porcelain")
    first = listed.splitlines()[0] if listed else ""
    if not first.startswith("worktree "):
        raise TrustError(f"cannot find the main checkout of {worktree}")
    return Path(first.removeprefix("worktree "))


def _changes(before: dict[str, str], after: dict[str, str], what: str) -> list[str]:
    named = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            named.append(f"{what} {key} removed")
        elif key not in before:
            named.append(f"{what} {key} created")
        elif before[key] != after[key]:
            named.append(f"{what} {key} changed")
    return named


def _is_delivery_commit(worktree: Path, revision: str, run_id: str, allowed: set[str]) -> bool:
    """A commit delivery made (its trailer) on top of an allowed head: the state a delivery
    retried after its controller died finds."""
    body = _git(worktree, "log", "-1", "--format=%B%x00%P", revision, check=False)
    message, _, parents = body.partition("\0")
    return (
        f"{TRAILER}: {run_id}" in message.splitlines()
        and parents.split() != []
        and parents.split()[0] in allowed
    )


def verify(
    worktree: Path,
    run_id: str,
    trust: dict[str, Any],
    *,
    delivered: Collection[str] = (),
    retried: bool = False,
    token: str = "",
) -> list[str]:
    """Violations of ``trust`` found now, one line each (empty when all is as recorded).
    ``delivered``: heads delivery recorded for this run (its branch may stand there);
    ``retried``: a delivery retry may also find its own unrecorded commit; ``token``: a
    ``GH_TOKEN`` to read an HTTPS remote with."""
    if trust.get("version") != TRUST_VERSION:
        return ["the run was not prepared for trusted delivery (no baseline recorded)"]
    problems: list[str] = []
    base = str(trust["baseRevision"])
    allowed = {base, *delivered}
    branch = BRANCH_PREFIX + run_id
    head_ref = _git(worktree, "symbolic-ref", "-q", "HEAD", check=False).strip()
    if head_ref != branch:
        problems.append(f"the worktree's HEAD is {head_ref or 'detached'}, not {branch}")
    head = _git(worktree, "rev-parse", "-q", "--verify", "HEAD", check=False).strip()
    if head not in allowed and not (
        retried and _is_delivery_commit(worktree, head, run_id, allowed)
    ):
        problems.append(
            f"a commit was made in the run's worktree: HEAD is {head[:12]}, "
            f"the engine left it at {base[:12]}"
        )
    branch_now = _git(worktree, "rev-parse", "-q", "--verify", branch, check=False).strip()
    if branch_now and branch_now != head:
        problems.append(f"the branch {branch} was moved to {branch_now[:12]}")
    problems += _changes(json.loads(trust["refsJson"]), local_refs(worktree), "ref")
    problems += _changes(json.loads(trust["configJson"]), config_digests(worktree), "git config")
    problems += _remote_problems(worktree, run_id, trust, allowed, retried, token)
    checkout = main_checkout(worktree)
    now = checkout_parts(checkout)
    for key, what in (("userHead", "HEAD"), ("userIndex", "index"), ("userFiles", "files")):
        if now[key] != trust[key]:
            problems.append(f"the user's checkout {checkout} changed ({what})")
    return problems


def _remote_problems(
    worktree: Path,
    run_id: str,
    trust: dict[str, Any],
    allowed: set[str],
    retried: bool,
    token: str,
) -> list[str]:
    if not trust.get("remoteRefsJson"):
        return []
    now = remote_refs(worktree, str(trust["remote"]), token)
    if now is None:
        return [f"the remote {trust['remote']} cannot be read to verify its refs"]
    own = BRANCH_PREFIX + run_id

    def delivered(sha: str) -> bool:
        return sha in allowed or (retried and _is_delivery_commit(worktree, sha, run_id, allowed))

    return moved_refs(json.loads(trust["remoteRefsJson"]), now, own, delivered)


def moved_refs(
    before: dict[str, str], now: dict[str, str], own: str, delivered: Callable[[str], bool]
) -> list[str]:
    """Each ref of the remote that moved between ``before`` and ``now``, in one line each:
    all of them, except ``own`` (the run's branch) standing where ``delivered(sha)`` says
    this run's delivery put it."""
    problems = []
    for name in sorted(set(before) | set(now)):
        was, sha = before.get(name), now.get(name)
        if was == sha or (name == own and sha is not None and delivered(sha)):
            continue
        if sha is None:
            problems.append(f"the remote's {quoting.name(name)} was deleted")
        else:
            problems.append(
                f"the remote's {quoting.name(name)} was pushed to {sha[:12]} during the run "
                f"(was {(was or 'absent')[:12]})"
            )
    return problems


# --- the trust_check node -------------------------------------------------------------------


def gate_record(graph: dict[str, Any], events: list[Any]) -> dict[str, Any] | None:
    """The record of the last gate that decided completion (``None`` when none did): its
    ``decision`` and the ``snapshotTree`` its checks ran on and its reviewers judged."""
    from zeroshot_kernel.software_change.review.ledger import FINAL_GATE_WORKER, GATE_WORKER, facts

    for fact in reversed(facts(graph, events)):
        if fact.role in (GATE_WORKER, FINAL_GATE_WORKER) and isinstance(fact.diagnostic, dict):
            try:
                record = json.loads(fact.diagnostic["recordJson"])
            except (KeyError, ValueError, TypeError):
                continue
            if isinstance(record, dict) and isinstance(record.get("decision"), dict):
                return record
    return None


def describe(decision: dict[str, Any] | None) -> str:
    if decision is None:
        return "no completion decision recorded"
    reasons = "; ".join(decision.get("reasons") or [])
    return f"{decision['state']}" + (f" ({reasons})" if reasons else "")


def delivered_heads(events: list[Any]) -> set[str]:
    """Heads this run's deliveries recorded in their receipts."""
    from zeroshot_kernel.contract.outcome import VerifierOutcome
    from zeroshot_kernel.ledger.events import NodeCompleted

    heads = set()
    for event in events:
        if isinstance(event, NodeCompleted) and event.completion.reference.node == "deliver":
            outcome = event.completion.outcome
            if isinstance(outcome, VerifierOutcome) and isinstance(outcome.output, dict):
                head = (outcome.output.get("receipt") or {}).get("headRevision")
                if head:
                    heads.add(str(head))
    return heads


def assess(
    worktree: Path,
    run_id: str,
    trust: dict[str, Any],
    graph: dict[str, Any],
    events: list[Any],
    token: str = "",
) -> tuple[str, str, str, str]:
    """(signal, one-line message, completion, reviewed tree) of the trust check."""
    record = gate_record(graph, events)
    decision = record["decision"] if record else None
    completion = describe(decision)
    problems = verify(worktree, run_id, trust, delivered=delivered_heads(events), token=token)
    if problems:
        return "tampered", "untrusted change: " + "; ".join(problems), completion, ""
    base = str(trust["baseRevision"])
    now = snapshot.take(worktree, base)
    reviewed = str(record.get("snapshotTree") or "") if record else ""
    if not reviewed:
        return "tampered", "untrusted change: no reviewed tree is recorded", completion, ""
    after = snapshot.changed(worktree, reviewed, now.tree)
    if after:
        return (
            "tampered",
            "untrusted change: changed after review: " + _listed(after),
            completion,
            reviewed,
        )
    if not now.touched.paths:
        left = (
            f" (build output left out: {_listed(now.touched.left_out)})"
            if now.touched.left_out
            else ""
        )
        return (
            "empty",
            f"empty change: no file differs from the base {base[:12]}{left}",
            completion,
            reviewed,
        )
    if now.touched.secrets:
        return "secret", refusal(now.touched.secrets), completion, reviewed
    mode = str(trust.get("mode", ""))
    if mode in GATED and (decision is None or decision.get("state") != PROVEN):
        if not trust.get("allowUnproven"):
            return (
                "unproven",
                f"unproven: the completion decision is {completion}; "
                "nothing delivered (--allow-unproven delivers anyway)",
                completion,
                reviewed,
            )
        return (
            "unproven_allowed",
            f"UNPROVEN delivery (--allow-unproven): the completion decision is {completion}",
            completion,
            reviewed,
        )
    return "trusted", "", completion, reviewed


def _listed(paths: list[str], shown: int = 20) -> str:
    """Untrusted names, escaped, the first ``shown`` of them (the rest counted)."""
    named = ", ".join(quoting.name(p) for p in paths[:shown])
    return named + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def trust_check(value: dict[str, Any], context: Any) -> Any:
    """``zeroshot.delivery.trust@1`` (python harness, trusted code): see the module doc."""
    from zeroshot_kernel.software_change.review.gate import run_events
    from zeroshot_kernel.workers import Verdict

    graph, events = run_events(context)
    try:
        signal, message, completion, tree = assess(
            context.workspace.resolve(),
            context.run_id,
            value["trust"],
            graph,
            events,
            context.env.get("GH_TOKEN", ""),
        )
    except (TrustError, snapshot.SnapshotError) as failure:
        signal, message, completion, tree = "tampered", f"untrusted change: {failure}", "", ""
    context.log(f"trust check: {signal}{': ' + message if message else ''}")
    return Verdict(
        signals={"trust": signal},
        diagnostic={"message": message, "completion": completion, "tree": tree},
    )
