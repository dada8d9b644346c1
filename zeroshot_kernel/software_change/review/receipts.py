"""Evidence receipts: what a command proved, bound to the exact tree and environment.

A receipt records the command, its exit code and the tail of its output, the snapshot tree
it ran on (``checked_tree``: the check ran on an export of exactly that tree, see
:mod:`.checks`), whether it ran in a box (``sandbox``), the limits it ran under and the one
that stopped it (``resource_limit``), the git commit and tree, two fingerprints of the
checkout and the environment, and its claims. Receipts recorded before checks were boxed
have none of the new fields and read as they were.
``working_tree_hash`` covers head, tree, branch, status, the staged and unstaged diffs and
the untracked files; ``dirty_tree_fingerprint`` is the same without head, tree and branch
(a clean checkout gives the hash of the empty string). Notebooks count by their
normalised cell sources (no outputs, no execution counts), so re-running a notebook does
not change the fingerprint and hidden kernel state never passes as current proof.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zeroshot_kernel.delivery.git import run_git
from zeroshot_kernel.safe_files import FileRefused, opened_below, read_open

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
OUTPUT_TAIL_BYTES = 4096
"""How much of a check's output its receipt keeps: the end, where failures are reported."""
NOTEBOOK_LIMIT = 64 << 20
"""A notebook larger than this is not parsed (its digest says so)."""
EvidenceClass = Literal["diagnostic", "claim_establishing"]


class Fingerprint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    git_commit: str
    git_tree: str
    branch: str
    working_tree_hash: str
    dirty_tree_fingerprint: str


class EvidenceReceipt(BaseModel):
    """One append-only receipt (v2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal["v2"] = "v2"
    id: str
    kind: str = "command"
    scope: str = "candidate"
    command: str
    command_argv: list[str]
    cwd: str
    exit_code: int
    started_at: float
    finished_at: float
    final_gate: bool = False
    git_commit: str
    git_tree: str
    working_tree_hash: str
    dirty_tree_fingerprint: str
    environment: dict[str, str]
    environment_fingerprint: str
    inputs: dict[str, str] = Field(default_factory=dict)
    """Declared inputs (paths) and their digests."""
    output_tail: str = ""
    """The end of the command's stdout and stderr, interleaved (at most
    :data:`OUTPUT_TAIL_BYTES`); recorded in the ledger through the controller's redaction,
    so declared secrets never appear in it."""
    evidence_class: EvidenceClass = "diagnostic"
    requirement_ids: list[str] = Field(default_factory=list)
    establishes: list[str] = Field(default_factory=list)
    does_not_establish: list[str] = Field(default_factory=list)
    environment_scope: str = "local"
    checked_tree: str = ""
    """The git tree id of the snapshot the check ran on (empty: it ran in the worktree)."""
    sandbox: str = ""
    """``bwrap`` (boxed) or ``none`` (UNCONTAINED); empty on receipts from before boxes."""
    limits: dict[str, str] = Field(default_factory=dict)
    """The box's limits as enforced (see ``sandbox.limits.LimitPlan.enforced``)."""
    resource_limit: str = ""
    """The limit that stopped the check (``memory``, ``processes``, ``file size``, ``cpu
    time``); empty when none did."""


class Invalidation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    receipt_id: str
    reason: str


def _git(cwd: Path, *args: str) -> str:
    try:
        done = run_git(cwd, *args)
    except subprocess.TimeoutExpired:
        return ""
    return done.stdout.decode(errors="replace") if done.returncode == 0 else ""


def _file_digest(root: Path, path: str) -> str:
    """The digest of a file of the checkout, read without following a link (a link, a FIFO
    or a folder is ``not a regular file``; a notebook counts by its normalised cells)."""
    sha = hashlib.sha256()
    try:
        with opened_below(root, path) as handle:
            if path.endswith(".ipynb"):
                sha.update(_normalised_bytes(read_open(handle, limit=NOTEBOOK_LIMIT, shown=path)))
            else:
                while chunk := os.read(handle, 1 << 20):
                    sha.update(chunk)
    except FileNotFoundError:
        return "missing"
    except (FileRefused, OSError):
        return "not a regular file"
    return sha.hexdigest()


def _same_notebook(worktree: Path, entry: str) -> bool:
    """A tracked notebook whose normalised sources equal HEAD's (only outputs changed)."""
    path = entry[3:]
    if not path.endswith(".ipynb") or entry.startswith("??"):
        return False
    try:
        with opened_below(worktree, path) as handle:
            now = _normalised_bytes(read_open(handle, limit=NOTEBOOK_LIMIT, shown=path))
        done = run_git(worktree, "show", f"HEAD:{path}")
    except (FileRefused, OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and _normalised_bytes(done.stdout) == now


def _normalised_bytes(raw: bytes) -> bytes:
    """A notebook's cell types and sources only; unreadable JSON counts as raw bytes."""
    try:
        cells = json.loads(raw).get("cells", [])
        kept = [
            (
                c.get("cell_type"),
                "".join(c.get("source", ""))
                if isinstance(c.get("source"), list)
                else c.get("source", ""),
            )
            for c in cells
        ]
    except (ValueError, AttributeError):
        return raw
    return json.dumps(kept, sort_keys=True).encode()


def fingerprint(worktree: Path) -> Fingerprint:
    """The checkout's fingerprints (see the module docstring)."""
    head = _git(worktree, "rev-parse", "HEAD").strip()
    tree = _git(worktree, "rev-parse", "HEAD^{tree}").strip()
    branch = _git(worktree, "symbolic-ref", "-q", "--short", "HEAD").strip()
    status = _git(worktree, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries = [e for e in status.split("\0") if e and not _same_notebook(worktree, e)]
    status = "\0".join(entries)
    changed = sorted({e[3:] for e in entries})
    plain = ["--", ".", ":(exclude)*.ipynb"]
    quiet = ("--no-ext-diff", "--no-textconv", "--binary")
    staged = _git(worktree, "diff", "--cached", *quiet, *plain)
    unstaged = _git(worktree, "diff", *quiet, *plain)
    untracked = {e[3:] for e in entries if e.startswith("??")}
    files = {
        p: _file_digest(worktree, p) for p in changed if p.endswith(".ipynb") or p in untracked
    }
    dirty_parts = [status, staged, unstaged, json.dumps(files, sort_keys=True)]
    dirty = EMPTY_SHA256 if not entries else _digest(dirty_parts)
    return Fingerprint(
        git_commit=head,
        git_tree=tree,
        branch=branch,
        working_tree_hash=_digest([head, tree, branch, *dirty_parts]),
        dirty_tree_fingerprint=dirty,
    )


def _digest(parts: Sequence[str]) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode())
        sha.update(b"\0")
    return sha.hexdigest()


def environment() -> dict[str, str]:
    return {
        "platform": sys.platform,
        "release": platform.release(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "host_version": "zeroshot",
    }


def environment_fingerprint(env: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(env), sort_keys=True).encode()).hexdigest()


def input_digests(root: Path, inputs: Sequence[str]) -> dict[str, str]:
    return {name: _file_digest(root, name) for name in inputs}


class Current(BaseModel):
    """What a receipt is compared with: the checkout and environment now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: Fingerprint
    environment_fingerprint: str
    inputs: dict[str, str] = Field(default_factory=dict)
    snapshot_tree: str = ""
    """The worktree's snapshot tree now (empty when not taken)."""


def current(worktree: Path, inputs: Sequence[str] = (), *, snapshot_tree: str = "") -> Current:
    return Current(
        fingerprint=fingerprint(worktree),
        environment_fingerprint=environment_fingerprint(environment()),
        inputs=input_digests(worktree, inputs),
        snapshot_tree=snapshot_tree,
    )


def staleness(
    receipt: EvidenceReceipt, now: Current, invalidations: Sequence[Invalidation] = ()
) -> str | None:
    """Why ``receipt`` is stale, or ``None`` when it is still valid (first match wins):
    an invalidation; the environment changed; the check ran on another snapshot tree; a
    declared input or its digest changed; (no inputs declared) the git tree changed; the
    dirty fingerprint changed."""
    for invalidation in invalidations:
        if invalidation.receipt_id == receipt.id:
            return f"invalidated: {invalidation.reason}"
    if receipt.environment_fingerprint != now.environment_fingerprint:
        return "environment_changed"
    if receipt.checked_tree and now.snapshot_tree and receipt.checked_tree != now.snapshot_tree:
        return "snapshot_tree_changed"
    if receipt.inputs:
        if set(receipt.inputs) != set(now.inputs):
            return "inputs_changed"
        changed = sorted(k for k, v in receipt.inputs.items() if now.inputs[k] != v)
        if changed:
            return f"input_digest_changed: {', '.join(changed)}"
    elif receipt.git_tree != now.fingerprint.git_tree:
        return "git_tree_changed"
    if receipt.dirty_tree_fingerprint != now.fingerprint.dirty_tree_fingerprint:
        return "dirty_fingerprint_changed"
    return None


def reusable(
    receipt: EvidenceReceipt,
    argv: Sequence[str],
    cwd: str,
    *,
    kind: str = "command",
    scope: str = "candidate",
    stale: str | None = None,
) -> bool:
    """Whether a receipt may stand in for running ``argv`` again (never for a final gate)."""
    return (
        not receipt.final_gate
        and stale is None
        and receipt.exit_code == 0
        and receipt.command_argv == list(argv)
        and receipt.cwd == cwd
        and receipt.kind == kind
        and receipt.scope == scope
    )
