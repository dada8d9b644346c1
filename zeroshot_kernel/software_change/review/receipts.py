"""Evidence receipts: what a command proved, bound to the exact tree and environment.

A receipt records the command, its exit code and the tail of its output, the git commit
and tree, two fingerprints of the checkout and the environment, and its claims.
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
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
OUTPUT_TAIL_BYTES = 4096
"""How much of a check's output its receipt keeps: the end, where failures are reported."""
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


class Invalidation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    receipt_id: str
    reason: str


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    return done.stdout if done.returncode == 0 else ""


def normalised_notebook(path: Path) -> bytes:
    """A notebook's cell types and sources only; unreadable JSON counts as raw bytes."""
    return _normalised_bytes(path.read_bytes())


def _file_digest(path: Path) -> str:
    if not path.is_file():
        return "missing"
    data = normalised_notebook(path) if path.suffix == ".ipynb" else path.read_bytes()
    return hashlib.sha256(data).hexdigest()


def _same_notebook(worktree: Path, entry: str) -> bool:
    """A tracked notebook whose normalised sources equal HEAD's (only outputs changed)."""
    path = entry[3:]
    if not path.endswith(".ipynb") or entry.startswith("??") or not (worktree / path).is_file():
        return False
    done = subprocess.run(
        ["git", "show", f"HEAD:{path}"], cwd=worktree, capture_output=True, timeout=60, check=False
    )
    if done.returncode != 0:
        return False
    return _normalised_bytes(done.stdout) == normalised_notebook(worktree / path)


def _normalised_bytes(raw: bytes) -> bytes:
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
    staged = _git(worktree, "diff", "--cached", "--binary", *plain)
    unstaged = _git(worktree, "diff", "--binary", *plain)
    files = {
        p: _file_digest(worktree / p)
        for p in changed
        if p.endswith(".ipynb") or any(e.startswith("??") and e[3:] == p for e in entries)
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
    return {name: _file_digest(root / name) for name in inputs}


def run_check(
    argv: Sequence[str],
    cwd: Path,
    *,
    receipt_id: str,
    requirement_ids: Sequence[str] = (),
    establishes: Sequence[str] = (),
    inputs: Sequence[str] = (),
    final_gate: bool = False,
    timeout_s: float = 1800,
) -> EvidenceReceipt:
    """Run one command in ``cwd`` and return its receipt. A command that declares
    requirement IDs and claims establishes them (only when it exits 0); any other is
    diagnostic."""
    started = time.time()
    code, output = _run(argv, cwd, timeout_s)
    finished = time.time()
    print_ = fingerprint(cwd)
    env = environment()
    claims = bool(requirement_ids and establishes)
    return EvidenceReceipt(
        id=receipt_id,
        command=" ".join(argv),
        command_argv=list(argv),
        cwd=str(cwd),
        exit_code=code,
        started_at=started,
        finished_at=finished,
        final_gate=final_gate,
        git_commit=print_.git_commit,
        git_tree=print_.git_tree,
        working_tree_hash=print_.working_tree_hash,
        dirty_tree_fingerprint=print_.dirty_tree_fingerprint,
        environment=env,
        environment_fingerprint=environment_fingerprint(env),
        inputs=input_digests(cwd, inputs),
        output_tail=output,
        evidence_class="claim_establishing" if claims else "diagnostic",
        requirement_ids=list(requirement_ids),
        establishes=list(establishes),
    )


def _run(argv: Sequence[str], cwd: Path, timeout_s: float) -> tuple[int, str]:
    """Exit code and output tail. The output goes to a file, not memory, so a chatty
    command costs disk, and only its last :data:`OUTPUT_TAIL_BYTES` are read back."""
    with tempfile.TemporaryFile() as sink:
        note = ""
        try:
            code = subprocess.run(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            code, note = 124, f"\n[zeroshot: no exit within {timeout_s:g} s; stopped]"
        except OSError as problem:
            code, note = 127, f"[zeroshot: cannot start: {problem.strerror or problem}]"
        size = sink.seek(0, os.SEEK_END)
        sink.seek(max(0, size - OUTPUT_TAIL_BYTES))
        tail = sink.read(OUTPUT_TAIL_BYTES).decode("utf-8", errors="replace")
    cut = "[zeroshot: earlier output not kept]\n" if size > OUTPUT_TAIL_BYTES else ""
    return code, cut + tail + note


class Current(BaseModel):
    """What a receipt is compared with: the checkout and environment now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: Fingerprint
    environment_fingerprint: str
    inputs: dict[str, str] = Field(default_factory=dict)


def current(worktree: Path, inputs: Sequence[str] = ()) -> Current:
    return Current(
        fingerprint=fingerprint(worktree),
        environment_fingerprint=environment_fingerprint(environment()),
        inputs=input_digests(worktree, inputs),
    )


def staleness(
    receipt: EvidenceReceipt, now: Current, invalidations: Sequence[Invalidation] = ()
) -> str | None:
    """Why ``receipt`` is stale, or ``None`` when it is still valid (first match wins):
    an invalidation; the environment changed; a declared input or its digest changed; (no
    inputs declared) the git tree changed; the dirty fingerprint changed."""
    for invalidation in invalidations:
        if invalidation.receipt_id == receipt.id:
            return f"invalidated: {invalidation.reason}"
    if receipt.environment_fingerprint != now.environment_fingerprint:
        return "environment_changed"
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
