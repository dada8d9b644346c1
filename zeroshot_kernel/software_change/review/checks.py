"""A declared check, run in a box on exactly the snapshot tree, and its receipt.

A check runs the repository's tests: code the writer wrote. So it runs as the other side
of the box (``../shared/design/containment.md``): the snapshot tree (the tree the
reviewers judge and delivery commits, see :mod:`zeroshot_kernel.software_change.snapshot`)
is exported into a fresh scratch folder, and the check runs there in a bubblewrap box with
no network, an environment allow-list (no ``GH_TOKEN``, no cloud key, no ledger URL), only
its folder and a home of its own writable, and :data:`CHECK_LIMITS`. A file the worktree
holds but the snapshot does not (ignored, excluded, build output) is not there, so it can
never make a check pass; whatever the check leaves dies and is deleted with its box.

The receipt records the tree (``checked_tree``), the box (``sandbox``: ``bwrap``, or
``none`` when the run chose ``--sandbox none``: UNCONTAINED), the limits and the one that
stopped the check (``resource_limit``). Where the run wants a box and none can be made, the
check does not run: its receipt says why (exit 127), never a silent run without a box.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zeroshot_kernel.sandbox import (
    Box,
    Containment,
    Limits,
    SandboxUnavailable,
    box_env,
    folder_policy,
)
from zeroshot_kernel.software_change.review.receipts import (
    OUTPUT_TAIL_BYTES,
    EvidenceReceipt,
    environment,
    environment_fingerprint,
    fingerprint,
    input_digests,
)
from zeroshot_kernel.software_change.snapshot import export

CHECK_LIMITS = Limits()
"""A check's limits: the box defaults (memory, processes, file size)."""
CHECK_TIMEOUT_S = 1800.0
CHECK_ENV_NAMES = ("VIRTUAL_ENV",)
"""Variables a check gets besides the box's base ones (none a credential)."""
_CANNOT_START = "bwrap: execvp"


@dataclass(frozen=True)
class Ran:
    exit_code: int
    output: str
    contained: bool
    limits: dict[str, str]
    resource_limit: str = ""


def run_check(
    argv: Sequence[str],
    worktree: Path,
    *,
    tree: str,
    containment: Containment,
    receipt_id: str,
    requirement_ids: Sequence[str] = (),
    establishes: Sequence[str] = (),
    inputs: Sequence[str] = (),
    final_gate: bool = False,
    timeout_s: float = CHECK_TIMEOUT_S,
) -> EvidenceReceipt:
    """Run ``argv`` on an export of ``tree`` (an object of ``worktree``'s repository) in a
    box and return its receipt. A command that declares requirement IDs and claims
    establishes them (only when it exits 0); any other is diagnostic."""
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="zeroshot-check-") as scratch:
        folder, home = Path(scratch) / "tree", Path(scratch) / "home"
        folder.mkdir()
        home.mkdir()
        export(worktree, tree, folder)
        ran = _boxed(argv, folder, home, containment, timeout_s)
    finished = time.time()
    now = fingerprint(worktree)
    env = environment()
    claims = bool(requirement_ids and establishes)
    return EvidenceReceipt(
        id=receipt_id,
        command=" ".join(argv),
        command_argv=list(argv),
        cwd=str(worktree),
        exit_code=ran.exit_code,
        started_at=started,
        finished_at=finished,
        final_gate=final_gate,
        git_commit=now.git_commit,
        git_tree=now.git_tree,
        working_tree_hash=now.working_tree_hash,
        dirty_tree_fingerprint=now.dirty_tree_fingerprint,
        environment=env,
        environment_fingerprint=environment_fingerprint(env),
        inputs=input_digests(worktree, inputs),
        output_tail=ran.output,
        evidence_class="claim_establishing" if claims else "diagnostic",
        requirement_ids=list(requirement_ids),
        establishes=list(establishes),
        checked_tree=tree,
        sandbox="bwrap" if ran.contained else "none",
        limits=ran.limits,
        resource_limit=ran.resource_limit,
    )


def _boxed(
    argv: Sequence[str], folder: Path, home: Path, containment: Containment, timeout_s: float
) -> Ran:
    """Exit code and output tail of ``argv`` run in its box. The output goes to a file,
    not memory, so a chatty check costs disk, and only the last
    :data:`~.receipts.OUTPUT_TAIL_BYTES` are read back."""
    env = box_env({"HOME": str(home)}, names=CHECK_ENV_NAMES)
    policy = folder_policy(
        folder, containment, env=env, network=False, limits=CHECK_LIMITS, also_writable=[home]
    )
    contained = containment.contained
    try:
        box = Box.open(policy, containment)
    except SandboxUnavailable as missing:
        return Ran(127, f"[zeroshot: not run: {missing}]", contained, {})
    with box, tempfile.TemporaryFile() as sink:
        note = ""
        try:
            child = box.spawn(argv, stdout=sink, stderr=subprocess.STDOUT)
        except OSError as problem:
            return Ran(
                127,
                f"[zeroshot: cannot start: {problem.strerror or problem}]",
                contained,
                box.limits,
            )
        code = child.wait(timeout_s)
        if code is None:
            child.terminate()
            code, note = 124, f"\n[zeroshot: no exit within {timeout_s:g} s; stopped]"
        size = sink.seek(0, os.SEEK_END)
        sink.seek(max(0, size - OUTPUT_TAIL_BYTES))
        tail = sink.read(OUTPUT_TAIL_BYTES).decode("utf-8", errors="replace")
        limit = box.exceeded(code, tail) or ""
        if code == 1 and box.contained and tail.startswith(_CANNOT_START):
            code, tail = 127, f"[zeroshot: cannot start: {tail.strip()}]"
        if limit:
            note += f"\n[zeroshot: stopped by its {limit} limit]"
    cut = "[zeroshot: earlier output not kept]\n" if size > OUTPUT_TAIL_BYTES else ""
    return Ran(code, cut + tail + note, box.contained, box.limits, limit)
