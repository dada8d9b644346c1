"""``--push``: the trusted delivery node publishes every accepted adoption as one commit on
``zeroshot/<run-id>`` in a bare remote on disk, and nothing else; a workspace that cannot
deliver is refused with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from auto_research_support import (
    Research,
    commit_all,
    commits,
    copy_task,
    git,
    new_workspace,
    repository_with_remote,
    start,
)

from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

# From the corner (-2, -1), rosenbrock is ~2509, its largest value on the domain: round 1
# (a sample of the whole domain) is an adoption, so every run below has one to deliver.
CORNER = {"x": -2.0, "y": -1.0}


def research_repository(root: Path) -> tuple[Path, Path, str]:
    repo, remote = repository_with_remote(root)
    new_workspace(repo)
    task = copy_task(repo, "rosenbrock", params=CORNER, repeats=2)
    commit_all(repo, "add the research task")
    return repo, remote, task


def test_push_commits_each_accepted_adoption_once(tmp_path: Path) -> None:
    repo, remote, task = research_repository(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    research = start(repo, task, 3, push=True)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()
    adopted = [r.round for r in view.rounds if r.adopted]
    assert adopted and adopted[0] == 1

    branch = f"zeroshot/{research.run.id}"
    published = list(commits(remote, branch, base))
    assert len(published) == len(adopted)  # one per adoption, none for the others
    titles = adoption_titles(research)
    for (sha, message), round_number in zip(published, adopted, strict=True):
        round_view = view.rounds[round_number - 1]
        assert message.splitlines()[0] == titles[round_number]
        assert f"Zeroshot-Round: {round_number}" in message
        assert f"Zeroshot-Candidate: {round_view.candidate_id}" in message
        committed = git(remote, "show", f"{sha}:{task}/candidate/params.json")
        stored = research.records.source_dir(round_view.candidate_id) / "params.json"
        assert committed == stored.read_text().strip()
    signals = [c.completion.outcome.signals["delivery"]
               for c in research.completions("deliver")
               if isinstance(c.completion.outcome, VerifierOutcome)]
    assert signals == ["published" if r.adopted else "skipped" for r in view.rounds]
    # Delivery worked in its own worktree; the user's checkout is as it was.
    worktree = repo / ".zeroshot" / "worktrees" / research.run.id
    assert git(worktree, "rev-parse", "HEAD") == published[-1][0]
    assert git(repo, "rev-parse", "HEAD") == base
    assert git(repo, "status", "--porcelain") == ""


def adoption_titles(research: Research) -> dict[int, str]:
    """The reviewer's title of each accepted adoption, by round, from the ledger."""
    results = research.results()
    verdicts = research.verdicts()
    return {result["round"]: verdict.diagnostic["title"]
            for result, verdict in zip(results, verdicts, strict=True)
            if verdict.signals["verdict"] == "accepted" and result["disposition"] == "adopt"}


def test_push_outside_a_repository_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "rosenbrock", repeats=2)
    research = start(workspace, task, 2, push=True)
    terminal = research.wait()
    assert isinstance(terminal, FailedResult) and terminal.reason == "delivery_failed"
    [delivery] = research.completions("deliver")  # the first delivery refuses
    assert isinstance(delivery.completion.outcome, ErrorOutcome)
    assert delivery.completion.outcome.code == "refusal"
    assert delivery.detail is not None and "not a git repository" in delivery.detail
    assert len(research.view().rounds) == 1


def test_push_to_an_unreachable_remote_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    repo, remote, task = research_repository(tmp_path)
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    research = start(repo, task, 2, push=True)
    terminal = research.wait()
    assert isinstance(terminal, FailedResult) and terminal.reason == "delivery_failed"
    delivery = research.completions("deliver")[-1]
    assert isinstance(delivery.completion.outcome, ErrorOutcome)
    assert delivery.detail is not None and "cannot be reached" in delivery.detail
    assert git(remote, "branch", "--list", "zeroshot/*") == ""


def test_cli_refuses_push_before_any_round_outside_a_repository(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "rosenbrock")
    done = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "research", "run", task, "--push"],
        cwd=workspace, capture_output=True, text=True, timeout=120,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a git repository" in done.stderr
    assert Client(workspace=str(workspace)).runs() == []
