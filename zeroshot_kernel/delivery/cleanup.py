"""Removing the worktrees and branches finished software changes leave behind.

A run works in ``.zeroshot/worktrees/<run-id>`` on ``zeroshot/<run-id>``. A failed run's
worktree is kept until cleaned so its change can be inspected; ``zeroshot change clean``
removes the worktrees and local branches of finished runs (failed ones; with ``--all``
also succeeded ones, whose change was delivered or, with ``--delivery none``, is only
there). An unfinished run's worktree is never touched: it may be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zeroshot_kernel.delivery.git import GitError
from zeroshot_kernel.delivery.worktree import (
    BRANCH_PREFIX,
    PUBLISH_WORKTREES,
    WORKTREES,
    DeliveryRefused,
    Repository,
)
from zeroshot_kernel.safe_files import FileRefused, opened_below, read_open, write_atomic

EXCLUDE_LIMIT = 1 << 20


@dataclass(frozen=True)
class Cleaned:
    run_id: str
    worktree: bool
    """Whether a worktree was (or, in a dry run, would be) removed."""
    branch: bool


async def clean_runs(
    repository: Repository,
    finished: dict[str, bool],
    *,
    include_succeeded: bool = False,
    dry_run: bool = False,
) -> list[Cleaned]:
    """Remove the worktree and the local branch of each run in ``finished`` (run id ->
    whether it succeeded) that failed, or any of them with ``include_succeeded``."""
    cleaned = []
    branches = set(
        (
            await repository.git(
                "for-each-ref", "--format=%(refname:short)", f"refs/heads/{BRANCH_PREFIX}"
            )
        ).split()
    )
    for run_id, succeeded in sorted(finished.items()):
        if succeeded and not include_succeeded:
            continue
        paths = [repository.root / folder / run_id for folder in (WORKTREES, PUBLISH_WORKTREES)]
        worktrees = [path for path in paths if path.is_dir()]
        branch = BRANCH_PREFIX + run_id
        has_worktree, has_branch = bool(worktrees), branch in branches
        if not (has_worktree or has_branch):
            continue
        if not dry_run:
            for path in worktrees:
                await repository.git("worktree", "remove", "--force", str(path))
            try:
                if has_branch:
                    await repository.git("branch", "-D", branch)
            except GitError:
                has_branch = False  # checked out elsewhere: left as it is
        cleaned.append(Cleaned(run_id, has_worktree, has_branch))
    await repository.git("worktree", "prune")
    return cleaned


async def exclude_workbench_files(repository: Repository) -> None:
    """Keep ``.zeroshot/`` (ledger, logs, worktrees) out of ``git status`` in the user's
    checkout, through the repository's own ``info/exclude`` (never the tracked
    ``.gitignore``)."""
    exclude = Path(await repository.git("rev-parse", "--git-path", "info/exclude"))
    exclude = exclude if exclude.is_absolute() else repository.root / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    try:  # never through a link another hand planted there
        text = _read(exclude)
        if "/.zeroshot/" not in text.splitlines():
            ending = "" if not text or text.endswith("\n") else "\n"
            write_atomic(exclude, (text + ending + "/.zeroshot/\n").encode())
    except (FileRefused, UnicodeDecodeError) as refused:
        raise DeliveryRefused(f"cannot keep .zeroshot/ out of git status: {refused}") from None


def _read(path: Path) -> str:
    try:
        with opened_below(path.parent, path.name) as handle:
            return read_open(handle, limit=EXCLUDE_LIMIT, shown=str(path)).decode("utf-8")
    except FileNotFoundError:
        return ""
