"""software-change with ``--delivery push`` and ``none`` against real git repositories and
bare remotes on disk: the run works in its own worktree on ``zeroshot/<run-id>``, the
target branch is the upstream (else the local branch) and must exist on the remote before
anything runs, and the delivery receipt certifies only a settled run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from software_change_support import change_cli, git, repository, script, start_change
from support import zeroshot

from zeroshot_kernel.delivery import DeliveryRefused
from zeroshot_kernel.ledger.events import (
    ExecutionReference,
    FailedResult,
    NodeCompleted,
    NodeStarted,
    Occurrence,
    RunEvent,
    SucceededResult,
)
from zeroshot_kernel.software_change.delivery import unsettled
from zeroshot_kernel.software_change.prepare import prepare

# slow: real software-change runs in real git repositories
pytestmark = pytest.mark.slow


def test_push_publishes_the_run_branch_from_its_own_worktree(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    change = start_change(repo, "Add a line to change.txt", delivery="push")
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    branch = f"zeroshot/{change.run.id}"
    head = git(remote, "rev-parse", branch)
    receipt = result.output["receipt"]
    assert receipt["headRevision"] == head and receipt["mode"] == "push"
    assert receipt["targetBranch"] == "main" and receipt["outcome"] == "published"
    assert git(remote, "show", f"{head}:change.txt") == "worker 1"
    assert git(remote, "rev-parse", f"{head}~1") == base
    assert ".zeroshot" not in git(remote, "ls-tree", "--name-only", head)
    # the user's checkout is untouched; the worktree is on the managed branch
    assert git(repo, "rev-parse", "HEAD") == base
    assert not (repo / "change.txt").exists()
    assert git(change.worktree, "symbolic-ref", "--short", "HEAD") == branch
    assert git(remote, "rev-parse", "main") == base  # push never touches the target


def test_two_runs_get_two_worktrees_and_branches(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    first = start_change(repo, "first", delivery="none")
    second = start_change(repo, "second", delivery="none")
    assert isinstance(first.wait(), SucceededResult)
    assert isinstance(second.wait(), SucceededResult)
    assert first.worktree != second.worktree
    for change in (first, second):
        assert (change.worktree / "change.txt").read_text() == "worker 1\n"
        assert (
            git(change.worktree, "symbolic-ref", "--short", "HEAD") == f"zeroshot/{change.run.id}"
        )
    assert git(remote, "branch", "--list", "zeroshot/*") == ""  # none keeps it local


def test_target_is_the_upstream_else_the_local_branch(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "branch", "-q", "--set-upstream-to", "origin/main")
    prepared = asyncio.run(prepare(repo, "push"))
    assert prepared.target is not None and prepared.target.branch == "main"
    git(repo, "branch", "-q", "--unset-upstream")
    git(repo, "push", "-q", "origin", "feature")
    prepared = asyncio.run(prepare(repo, "push"))
    assert prepared.target is not None and prepared.target.branch == "feature"
    assert prepared.target.revision == git(remote, "rev-parse", "feature")


def test_a_target_missing_on_the_remote_fails_preparation(tmp_path: Path) -> None:
    repo, _remote = repository(tmp_path)
    git(repo, "checkout", "-q", "-b", "local-only")
    with pytest.raises(DeliveryRefused, match="target branch could not be verified"):
        asyncio.run(prepare(repo, "pr"))
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    git(repo, "checkout", "-q", "main")
    with pytest.raises(DeliveryRefused, match="target branch could not be verified"):
        asyncio.run(prepare(repo, "push"))


@pytest.mark.parametrize("flags", [("--delivery", "push"), ("--push",)])
def test_cli_refuses_an_unverified_target_before_any_run(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    repo, _remote = repository(tmp_path)
    git(repo, "checkout", "-q", "-b", "local-only")
    done = change_cli(repo, tmp_path, *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "target branch could not be verified" in done.stderr
    assert not (repo / ".zeroshot" / "worktrees").exists()


def test_cli_takes_one_delivery(tmp_path: Path) -> None:
    repo, _remote = repository(tmp_path)
    for flags, named in [
        (("--push", "--ship"), "push and ship"),
        (("--delivery", "none", "--pr"), "none and pr"),
    ]:
        done = change_cli(repo, tmp_path, *flags)
        assert done.returncode == 2 and f"choose one delivery, not {named}" in done.stderr
    assert not (repo / ".zeroshot" / "worktrees").exists()


def test_change_commands_outside_git_say_so_without_research_advice(tmp_path: Path) -> None:
    """``change run`` and ``change clean`` outside a repository are refused in one line
    that names the missing repository and gives no advice meant for ``research --push``."""
    plain = tmp_path / "plain"
    (plain / ".zeroshot").mkdir(parents=True)  # a workspace of its own, outside any repository
    for done in (
        change_cli(plain, tmp_path, "--delivery", "none"),
        change_cli(plain, tmp_path),
        zeroshot(plain, "change", "clean", "--dry-run"),
    ):
        assert done.returncode == 2, done.stdout + done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"error: the workspace {plain} is not a git repository"), line
        assert line.endswith("run zeroshot inside a git repository"), line
        assert "--push" not in line and "accepted rounds" not in line
    assert [path.name for path in plain.iterdir()] == [".zeroshot"]
    assert list((plain / ".zeroshot").iterdir()) == []


def test_review_findings_are_fixed_before_delivery(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    script(repo, {"code": ["rejected", "accepted"]})
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    head = result.output["receipt"]["headRevision"]
    assert git(remote, "show", f"{head}:change.txt").splitlines() == ["worker 1", "review_repair 1"]
    assert change.signals("review_gate", "lifecycle") == ["correction", "approved"]


def _ref(node: str, execution: str) -> ExecutionReference:
    return ExecutionReference(run_id="r", node=node, node_instance=f"{node}#0", execution=execution)


def test_delivery_is_unconfirmed_while_another_execution_is_open() -> None:
    started: list[RunEvent] = [
        NodeStarted(
            reference=_ref("code", "e1"), occurrence=Occurrence(node="code"), attempt=1, input=None
        ),
        NodeStarted(
            reference=_ref("deliver", "e2"),
            occurrence=Occurrence(node="deliver"),
            attempt=1,
            input=None,
        ),
    ]
    assert unsettled(started, "e2") == ["code"]
    from zeroshot_kernel.contract.outcome import VerifiedOutcome
    from zeroshot_kernel.ledger.events import Completion

    settled: list[RunEvent] = [
        started[0],
        NodeCompleted(
            completion=Completion(
                reference=_ref("code", "e1"),
                outcome=VerifiedOutcome(status="verified", output=None),
            )
        ),
        started[1],
    ]
    assert unsettled(settled, "e2") == []


def test_an_empty_change_is_not_delivered(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    script(repo, {"worker": {"file": ".zeroshot/ignored.txt"}})
    (repo / ".zeroshot").mkdir(exist_ok=True)
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "empty_change"
    assert git(remote, "branch", "--list", "zeroshot/*") == ""
