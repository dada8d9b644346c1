"""Trusted verification of a software-change run before anything is delivered.

At preparation (before any agent runs) :func:`baseline` records what the run must find
unchanged: the base revision, the repository's refs (tags and branches other than the
managed ``zeroshot/*`` ones), its local git config, the push remote's refs, and the
user's own checkout (HEAD, index, tracked and untracked files' status). The record goes
into the run's input (``trust``), so it sits in the ledger and a resumed run checks the
same thing.

:func:`verify` compares the run's worktree, the repository, the remote and the user's
checkout with that record; any difference is a violation named in one line. The
``trust_check`` node (trusted code, before delivery in every mode) also refuses an empty
change and secret-looking files, and gates publishing on the completion decision unless
the user allowed an unproven delivery. :func:`delivery_paths` is what delivery stages:
exactly the files the change touched relative to the base, never ``.zeroshot/``, new build
output left out.

A remote ref that moved to a commit this repository does not hold was pushed by someone
else and is not held against the run; one that moved to (or was deleted in favour of) a
commit held here was pushed from here, which only delivery may do, and only to the run's
own branch.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from zeroshot_kernel.delivery.git import QUIET_ENV
from zeroshot_kernel.exceptions import Refused

TRUST_WORKER = "zeroshot.delivery.trust@1"
TRUST_CALLABLE = "zeroshot_kernel.software_change.trust:trust_check"
TRUST_VERSION = "v1"
BRANCH_PREFIX = "refs/heads/zeroshot/"
RUN_DIR = ".zeroshot"
TRAILER = "Zeroshot-Run"
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials*.json",
    "*.p12",
    "*.pfx",
)
SECRET_EXAMPLES = (".env.example", ".env.sample", ".env.template", ".env.dist")
BUILD_DIRS = (
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
)
BUILD_FILES = ("*.pyc", "*.pyo")
PRIVATE_KEY = b"PRIVATE KEY-----"
SCANNED_BYTES = 1 << 20
GATED = ("push", "pr", "ship")
PROVEN = "CANDIDATE_COMPLETE"


class TrustError(Refused):
    """git could not answer a question the check needs."""


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "--no-optional-locks", *args],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, **QUIET_ENV},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
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
    diff = _git(root, "diff", "--no-ext-diff", "--binary", *spec)
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


def remote_refs(root: Path, remote: str) -> dict[str, str] | None:
    """The remote's branches and tags, or ``None`` when it cannot be read."""
    if not remote:
        return None
    try:
        listed = _git(root, "ls-remote", "--heads", "--tags", remote)
    except (TrustError, subprocess.TimeoutExpired):
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
    remote_now = remote_refs(root, remote)
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
) -> list[str]:
    """Violations of ``trust`` found now, one line each (empty when all is as recorded).
    ``delivered``: heads delivery recorded for this run (its branch may stand there);
    ``retried``: a delivery retry may also find its own unrecorded commit."""
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
    problems += _remote_problems(worktree, run_id, trust)
    checkout = main_checkout(worktree)
    now = checkout_parts(checkout)
    for key, what in (("userHead", "HEAD"), ("userIndex", "index"), ("userFiles", "files")):
        if now[key] != trust[key]:
            problems.append(f"the user's checkout {checkout} changed ({what})")
    return problems


def _remote_problems(worktree: Path, run_id: str, trust: dict[str, Any]) -> list[str]:
    if not trust.get("remoteRefsJson"):
        return []
    now = remote_refs(worktree, str(trust["remote"]))
    if now is None:
        return [f"the remote {trust['remote']} cannot be read to verify its refs"]
    before: dict[str, str] = json.loads(trust["remoteRefsJson"])
    own = BRANCH_PREFIX + run_id
    problems = []
    for name in sorted(set(before) | set(now)):
        if name == own or before.get(name) == now.get(name):
            continue
        sha = now.get(name)
        if sha is None:
            problems.append(f"the remote's {name} was deleted")
        elif _known(worktree, sha):
            problems.append(
                f"the remote's {name} was pushed to {sha[:12]} from this "
                f"repository (was {(before.get(name) or 'absent')[:12]})"
            )
    return problems


def _known(worktree: Path, sha: str) -> bool:
    return (
        subprocess.run(
            ["git", "cat-file", "-e", sha], cwd=worktree, capture_output=True, timeout=60
        ).returncode
        == 0
    )


# --- what the change touched --------------------------------------------------------------


@dataclass(frozen=True)
class Touched:
    paths: list[str]
    """What delivery stages: changed tracked files and new files (not build output)."""
    left_out: list[str]
    """New build output, left unstaged."""
    secrets: list[str]
    """Secret-looking files among ``paths`` (delivery refuses them)."""


def _split(text: str) -> list[str]:
    return [p for p in text.split("\0") if p]


def _build_output(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return any(p in BUILD_DIRS or p.endswith(".egg-info") for p in parts[:-1]) or any(
        fnmatch.fnmatch(parts[-1], pattern) for pattern in BUILD_FILES
    )


def _secret(worktree: Path, path: str) -> bool:
    name = PurePosixPath(path).name
    if name not in SECRET_EXAMPLES and any(fnmatch.fnmatch(name, p) for p in SECRET_NAMES):
        return True
    file = worktree / path
    if not file.is_file() or file.is_symlink():
        return False
    with file.open("rb") as handle:
        head = handle.read(SCANNED_BYTES)
    return b"-----BEGIN " in head and PRIVATE_KEY in head


def touched(worktree: Path, base: str) -> Touched:
    """The files the change touched relative to ``base`` (deletions included)."""
    tracked = _split(_git(worktree, "diff", "--name-only", "-z", "--no-renames", base, "--"))
    new = _split(_git(worktree, "ls-files", "--others", "--exclude-standard", "-z"))
    mine = [
        p for p in dict.fromkeys(tracked + new) if p != RUN_DIR and not p.startswith(RUN_DIR + "/")
    ]
    left_out = [p for p in mine if p in new and p not in tracked and _build_output(p)]
    paths = [p for p in mine if p not in left_out]
    return Touched(paths, left_out, [p for p in paths if _secret(worktree, p)])


# --- the trust_check node -------------------------------------------------------------------


def decision_of(graph: dict[str, Any], events: list[Any]) -> dict[str, Any] | None:
    """The completion decision the last gate recorded (``None`` when none did)."""
    from zeroshot_kernel.software_change.review.ledger import FINAL_GATE_WORKER, GATE_WORKER, facts

    for fact in reversed(facts(graph, events)):
        if fact.role in (GATE_WORKER, FINAL_GATE_WORKER) and isinstance(fact.diagnostic, dict):
            try:
                decision: dict[str, Any] = json.loads(fact.diagnostic["recordJson"])["decision"]
            except (KeyError, ValueError, TypeError):
                continue
            return decision
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
    worktree: Path, run_id: str, trust: dict[str, Any], graph: dict[str, Any], events: list[Any]
) -> tuple[str, str, str]:
    """(signal, one-line message, completion) of the trust check."""
    decision = decision_of(graph, events)
    completion = describe(decision)
    problems = verify(worktree, run_id, trust, delivered=delivered_heads(events))
    if problems:
        return "tampered", "untrusted change: " + "; ".join(problems), completion
    found = touched(worktree, str(trust["baseRevision"]))
    if not found.paths:
        left = f" (build output left out: {', '.join(found.left_out)})" if found.left_out else ""
        return (
            "empty",
            f"empty change: no file differs from the base {str(trust['baseRevision'])[:12]}{left}",
            completion,
        )
    mode = str(trust.get("mode", ""))
    if mode in GATED and found.secrets:
        return (
            "secret",
            "refusing to deliver secret-looking file(s): " + ", ".join(found.secrets),
            completion,
        )
    if mode in GATED and (decision is None or decision.get("state") != PROVEN):
        if not trust.get("allowUnproven"):
            return (
                "unproven",
                f"unproven: the completion decision is {completion}; "
                "nothing delivered (--allow-unproven delivers anyway)",
                completion,
            )
        return (
            "unproven_allowed",
            f"UNPROVEN delivery (--allow-unproven): the completion decision is {completion}",
            completion,
        )
    return "trusted", "", completion


def trust_check(value: dict[str, Any], context: Any) -> Any:
    """``zeroshot.delivery.trust@1`` (python harness, trusted code): see the module doc."""
    from zeroshot_kernel.software_change.review.gate import run_events
    from zeroshot_kernel.workers import Verdict

    graph, events = run_events(context)
    try:
        signal, message, completion = assess(
            context.workspace.resolve(), context.run_id, value["trust"], graph, events
        )
    except TrustError as failure:
        signal, message, completion = "tampered", f"untrusted change: {failure}", ""
    context.log(f"trust check: {signal}{': ' + message if message else ''}")
    return Verdict(
        signals={"trust": signal}, diagnostic={"message": message, "completion": completion}
    )
