"""What a software-change reviewer on an LLM harness is shown by trusted code.

The reviewers of a software change (``acceptance``, ``code``, ``seam_review``,
``integration_review``) get the task as their input; their role (see
:mod:`zeroshot_kernel.harness.roles`) adds a *brief* the engine computes itself:

- the base revision: the commit the run's worktree branched from, as recorded at
  preparation (the run input's ``delivery.baseRevision``, else ``trust.baseRevision``);
- the change: ``git diff BASE`` of the run's worktree, new untracked files included and
  ``.zeroshot/`` left out, within :data:`DIFF_BUDGET_BYTES` (the brief says how much was
  cut and how to read the rest);
- the check receipts recorded so far in the ledger (the review gates' records): command,
  exit code, receipt id, whether it was taken on the tree under review, and the tail of
  its output when the receipt holds one.

Reviewers are asked to cite what they saw (``path:line`` from the diff, a receipt). With
tools (claude, codex) they may inspect more with read-only git commands and the run's
declared checks (granted to the turn as ``granted_commands``). Nothing
here comes from a model: the brief is read from git and the ledger.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult
from zeroshot_kernel.harness.roles import Preparation
from zeroshot_kernel.ledger.events import NodeCompleted

DIFF_BUDGET_BYTES = 40_000
"""How many bytes of the change's diff a brief quotes (the rest is counted, not shown)."""
OUTPUT_TAIL_CHARS = 1_500
RECEIPTS_SHOWN = 12
UNTRACKED_MAX_BYTES = 1 << 20
"""A new file larger than this is listed, not diffed."""
RUN_DIR = ".zeroshot"
WORKTREES = Path(RUN_DIR) / "worktrees"
PLACEHOLDER_BASE = "0" * 40
REVIEWER_WORKERS = (
    "builtin.agent.acceptance-verifier@1",
    "builtin.agent.code-verifier@1",
    "builtin.agent.seam-verifier@1",
    "builtin.agent.integration-verifier@1",
)
_OUTPUT_KEYS = (
    "output_tail",
    "outputTail",
    "output",
    "stdout_tail",
    "stdout",
    "stderr_tail",
    "stderr",
)
_QUIET = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_PAGER": "cat"}


# --- where the change is -------------------------------------------------------------------


def base_revision(run_input: Any) -> str | None:
    """The base the run branched from, as recorded in the run input at preparation
    (``None`` when the input holds none, or only the unprepared placeholder)."""
    if not isinstance(run_input, dict):
        return None
    for record in (run_input.get("delivery"), run_input.get("trust")):
        if isinstance(record, dict):
            base = record.get("baseRevision")
            if isinstance(base, str) and base.strip() and base.strip() != PLACEHOLDER_BASE:
                return base.strip()
    return None


def run_worktree(request: ExecutionRequest) -> Path:
    """The run's worktree: the workspace itself (a software change's controller runs in
    its worktree), or ``.zeroshot/worktrees/<run-id>`` below it when that exists."""
    own = Path(request.workspace) / WORKTREES / request.run_id
    return own if own.is_dir() else Path(request.workspace)


def declared_checks(run_input: Any) -> list[str]:
    """The run's ``--check`` commands (the run input's ``review.checks``)."""
    review = run_input.get("review") if isinstance(run_input, dict) else None
    checks = review.get("checks") if isinstance(review, dict) else None
    if not isinstance(checks, list):
        return []
    return [c.strip() for c in checks if isinstance(c, str) and c.strip()]


# --- the diff ------------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> tuple[int, bytes, str]:
    done = subprocess.run(
        ["git", "--no-optional-locks", "-c", "core.quotePath=false", *args],
        cwd=cwd,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={**os.environ, **_QUIET},
    )
    return done.returncode, done.stdout, done.stderr.decode(errors="replace").strip()


@dataclass(frozen=True)
class ChangeDiff:
    base: str
    files: list[str]
    """One line per changed file: ``M path``, ``A path (new file)``, ..."""
    text: str
    """The quoted diff, within the budget."""
    shown_bytes: int
    total_bytes: int
    omitted: list[str]
    """Files whose diff does not fit (or is not text) and is not quoted."""

    @property
    def cut(self) -> bool:
        return self.shown_bytes < self.total_bytes


def change_diff(worktree: Path, base: str, budget: int = DIFF_BUDGET_BYTES) -> ChangeDiff:
    """``git diff BASE`` of ``worktree`` plus its new untracked files, ``.zeroshot/`` left
    out, quoted up to ``budget`` bytes. Raises :class:`RuntimeError` when git cannot say."""
    spec = ["--", ".", f":(exclude){RUN_DIR}"]
    code, listed, problem = _git(
        worktree, "diff", "--no-ext-diff", "--name-status", "-z", base, *spec
    )
    if code != 0:
        raise RuntimeError(f"git diff {base} failed in {worktree}: {problem}")
    fields = listed.decode(errors="replace").split("\0")
    files: list[str] = []
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index]
        paths = fields[index + 1 : index + (3 if status[:1] in "RC" else 2)]
        index += 1 + len(paths)
        files.append(f"{status[:1]} {' -> '.join(paths)}")
    code, untracked_out, problem = _git(
        worktree, "ls-files", "--others", "--exclude-standard", "-z", *spec
    )
    if code != 0:
        raise RuntimeError(f"git ls-files failed in {worktree}: {problem}")
    untracked = sorted(p for p in untracked_out.decode(errors="replace").split("\0") if p)
    files += [f"A {path} (new file, not yet added)" for path in untracked]

    pieces: list[tuple[str, bytes]] = []
    code, tracked, problem = _git(worktree, "diff", "--no-ext-diff", "--no-color", base, *spec)
    if code != 0:
        raise RuntimeError(f"git diff {base} failed in {worktree}: {problem}")
    pieces += [(name, chunk) for name, chunk in _per_file(tracked)]
    for path in untracked:
        target = worktree / path
        if (
            not target.is_symlink()
            and target.is_file()
            and target.stat().st_size > UNTRACKED_MAX_BYTES
        ):
            pieces.append(
                (
                    path,
                    f"new file {path}: {target.stat().st_size} bytes, too large "
                    "to quote\n".encode(),
                )
            )
            continue
        _, added, _ = _git(
            worktree, "diff", "--no-ext-diff", "--no-color", "--no-index", "--", "/dev/null", path
        )
        pieces.append((path, added))
    total = sum(len(chunk) for _, chunk in pieces)
    shown: list[bytes] = []
    omitted: list[str] = []
    room = budget
    for name, chunk in pieces:
        if len(chunk) <= room and not omitted:
            shown.append(chunk)
            room -= len(chunk)
        elif not omitted and room > 0:  # the first file that does not fit: its head
            head = chunk[:room].rsplit(b"\n", 1)[0] + b"\n" if b"\n" in chunk[:room] else b""
            shown.append(head)
            room = 0
            omitted.append(f"{name} (quoted in part)")
        else:
            omitted.append(name)
    quoted = b"".join(shown)
    return ChangeDiff(base, files, quoted.decode(errors="replace"), len(quoted), total, omitted)


def _per_file(diff: bytes) -> list[tuple[str, bytes]]:
    """A multi-file diff split at its ``diff --git`` headers (name: the header's b/ path)."""
    found: list[tuple[str, bytes]] = []
    for chunk in diff.split(b"\ndiff --git "):
        if not chunk:
            continue
        chunk = chunk if chunk.startswith(b"diff --git ") else b"diff --git " + chunk
        chunk = chunk if chunk.endswith(b"\n") else chunk + b"\n"
        header = chunk.split(b"\n", 1)[0].decode(errors="replace")
        name = header.rsplit(" b/", 1)[-1] if " b/" in header else header
        found.append((name, chunk))
    return found


# --- the receipts --------------------------------------------------------------------------


@dataclass(frozen=True)
class Receipt:
    node: str
    record: dict[str, Any]


def recorded_receipts(events: Sequence[Any]) -> list[Receipt]:
    """Every check receipt the run's trusted gates recorded (their ``recordJson``), oldest
    first."""
    found: list[Receipt] = []
    for event in events:
        if not isinstance(event, NodeCompleted):
            continue
        outcome = event.completion.outcome
        if not isinstance(outcome, VerifierOutcome) or not isinstance(outcome.diagnostic, dict):
            continue
        raw = outcome.diagnostic.get("recordJson")
        if not isinstance(raw, str):
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        receipts = record.get("receipts") if isinstance(record, dict) else None
        for receipt in receipts if isinstance(receipts, list) else []:
            if isinstance(receipt, dict) and isinstance(receipt.get("command"), str):
                found.append(Receipt(event.completion.reference.node, receipt))
    return found


def _tree_now(worktree: Path) -> str | None:
    """The worktree's dirty-tree fingerprint now (as receipts record it), or ``None``."""
    try:
        from zeroshot_kernel.software_change.review.receipts import fingerprint

        now = fingerprint(worktree)
        return f"{now.dirty_tree_fingerprint}/{now.git_tree}"
    except (OSError, subprocess.SubprocessError, ValueError):  # only a note depends on it
        return None


def _receipt_lines(receipts: list[Receipt], tree_now: str | None) -> list[str]:
    lines = []
    for receipt in receipts[-RECEIPTS_SHOWN:]:
        record = receipt.record
        tree = f"{record.get('dirty_tree_fingerprint')}/{record.get('git_tree')}"
        where = (
            ""
            if tree_now is None
            else ", on the tree under review"
            if tree == tree_now
            else ", on an earlier tree (the change moved since)"
        )
        lines.append(
            f"- `{record['command']}` -> exit {record.get('exit_code')} (receipt "
            f"{record.get('id', '?')}, recorded by {receipt.node}{where})"
        )
        tail = next(
            (
                record[k]
                for k in _OUTPUT_KEYS
                if isinstance(record.get(k), str) and record[k].strip()
            ),
            None,
        )
        if tail is not None:
            quoted = tail.strip()[-OUTPUT_TAIL_CHARS:]
            lines += [
                "  output (tail):",
                "  ```",
                *(f"  {line}" for line in quoted.splitlines()),
                "  ```",
            ]
        else:
            lines.append("  (the receipt records no output)")
    if len(receipts) > RECEIPTS_SHOWN:
        lines.insert(0, f"({len(receipts) - RECEIPTS_SHOWN} earlier receipt(s) not shown)")
    return lines


# --- the brief -----------------------------------------------------------------------------


def reviewer_brief(request: ExecutionRequest, *, tools: bool) -> str:
    """The trusted context of a software-change reviewer's turn (see the module doc)."""
    worktree = run_worktree(request)
    base = base_revision(request.run_input)
    parts = ["## The change under review (computed by the engine from git)"]
    if base is None:
        code, head, _ = _git(worktree, "rev-parse", "-q", "--verify", "HEAD")
        base = head.decode().strip() if code == 0 and head.strip() else None
        if base is not None:
            parts.append(
                f"No base revision is recorded for this run; the diff is against the "
                f"worktree's HEAD, {base}."
            )
    else:
        parts.append(
            f"Base revision: {base} (the commit this run's worktree branched from; "
            "the change is everything in the working tree that differs from it)."
        )
    diff = None
    if base is None:
        parts.append(
            "The engine could not find a base revision or a git HEAD in the "
            f"worktree {worktree}, so it cannot show the change."
        )
    else:
        try:
            diff = change_diff(worktree, base)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as failed:
            parts.append(f"The engine could not compute the change: {failed}")
    if diff is not None:
        parts += _diff_parts(diff, tools=tools)
    parts += _receipt_parts(request, worktree)
    parts.append(_instructions(base, tools=tools, checks=declared_checks(request.run_input)))
    return "\n\n".join(parts) + "\n"


def _diff_parts(diff: ChangeDiff, *, tools: bool) -> list[str]:
    if not diff.files:
        return ["The working tree does not differ from the base: the change is empty."]
    shown = diff.shown_bytes
    parts = [
        f"### Files changed ({len(diff.files)})",
        "\n".join(diff.files),
        f"### Diff against the base (`git diff {diff.base}`, new files included, "
        f"{RUN_DIR}/ left out)",
        "```diff\n" + diff.text.rstrip("\n") + "\n```",
    ]
    if diff.cut:
        more = f"; read the rest with `git diff {diff.base} -- PATH`" if tools else ""
        parts.append(
            f"[diff cut: {shown} of {diff.total_bytes} bytes quoted (budget "
            f"{DIFF_BUDGET_BYTES}); not quoted: {', '.join(diff.omitted)}{more}]"
        )
    else:
        parts.append(f"[the whole diff: {diff.total_bytes} bytes]")
    return parts


def _receipt_parts(request: ExecutionRequest, worktree: Path) -> list[str]:
    checks = declared_checks(request.run_input)
    receipts = recorded_receipts(request.events())
    heading = (
        "## Check receipts recorded so far (trusted: run by the engine just before "
        "the reviews and by its review gates)"
    )
    if receipts:
        return [heading, "\n".join(_receipt_lines(receipts, _tree_now(worktree)))]
    if checks:
        listed = ", ".join(f"`{c}`" for c in checks)
        return [
            heading,
            f"None recorded yet. The declared checks ({listed}) run in the "
            "engine's review gate after this review.",
        ]
    return [heading, "None: the run declares no checks (no --check)."]


def _instructions(base: str | None, *, tools: bool, checks: list[str]) -> str:
    lines = [
        "## How to answer",
        "Judge the change shown above. Cite what you saw for every finding and for the "
        "verdict: the file and line from the diff (`path:line`) and, for any claim that "
        "checks pass or fail, the receipt (its command and exit code). A claim you "
        "cannot tie to the diff or a receipt is not evidence; say so instead.",
    ]
    if tools:
        inspect = [f"`git diff {base or 'BASE'}`", "`git log`", "`git show`", "`git status`"]
        inspect += [f"`{c}`" for c in checks]
        lines.append(
            "You may inspect more, read-only, in your working directory (the run's "
            f"worktree): read files and run {', '.join(inspect)}. Change nothing."
        )
    return "\n\n".join(lines)


class ReviewerRole:
    """A software-change reviewer: briefed with the base, the diff and the receipts."""

    def prepare(self, request: ExecutionRequest, *, tools: bool) -> Preparation:
        return Preparation(
            brief=reviewer_brief(request, tools=tools),
            granted_commands=tuple(declared_checks(request.run_input)),
        )

    def finish(
        self, request: ExecutionRequest, preparation: Preparation, result: HarnessResult
    ) -> HarnessResult:
        return result


REVIEWER = ReviewerRole()
