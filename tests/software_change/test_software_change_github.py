"""software-change ``--delivery pr`` and ``ship`` against a loopback stand-in for GitHub
(tests/github_server.py: the REST endpoints delivery uses, on 127.0.0.1, backed by the
bare remote on disk): open, update, review feedback, checks pending then green, conflict,
merge with an allowed method, and a missing required approval."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from github_server import TOKEN, GitHubState, github_server
from software_change_support import git, repository, start_change

from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

# slow: real software-change runs against a loopback GitHub
pytestmark = pytest.mark.slow


@pytest.fixture
def github(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, GitHubState, str]]:
    repo, remote = repository(tmp_path)
    state = GitHubState(remote=remote)
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    with github_server(state) as url:
        yield repo, state, url


def test_pr_opens_a_pull_request_waits_for_checks_and_does_not_merge(
    github: tuple[Path, GitHubState, str],
) -> None:
    repo, state, url = github
    state.protection = {"required_status_checks": {"contexts": ["tests"]}}
    state.check_names, state.pending_polls = ("tests", "lint"), 2
    change = start_change(repo, "Add a line", delivery="pr", api_url=url)
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    receipt = result.output["receipt"]
    assert receipt["mode"] == "pr" and receipt["outcome"] == "opened"
    assert receipt["pullRequestId"] == 1 and receipt["repository"] == "octo/project"
    assert receipt["headRevision"] == state.head(f"zeroshot/{change.run.id}")
    assert state.check_polls == 3  # pending twice, then green
    assert state.pulls[1]["base"] == "main" and not state.pulls[1]["merged"]
    assert ("PUT", "/pulls/1/merge") not in state.calls
    assert git(state.remote, "rev-parse", "main") == git(repo, "rev-parse", "HEAD")


def test_pr_feedback_goes_through_the_repair_loop_and_updates_the_pull(
    github: tuple[Path, GitHubState, str],
) -> None:
    repo, state, url = github
    state.reviews = [
        {
            "user": {"login": "maintainer"},
            "state": "CHANGES_REQUESTED",
            "commit_id": "FIRST_HEAD",
            "body": "Please also update the docs.",
        }
    ]
    state.comments = [
        {"commit_id": "FIRST_HEAD", "path": "change.txt", "line": 1, "body": "typo here"}
    ]
    change = start_change(repo, delivery="pr", api_url=url)
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    assert change.signals("deliver", "delivery") == ["feedback", "opened"]
    [repair] = change.completions("delivery_repair")
    assert repair is not None
    first = change.completions("deliver")[0].completion.outcome
    assert "Please also update the docs." in first.diagnostic["message"]  # type: ignore
    assert "change.txt:1: typo here" in first.diagnostic["message"]  # type: ignore
    assert len(state.pulls) == 1  # one pull request, opened then updated
    assert ("POST", "/pulls") in state.calls and ("PATCH", "/pulls/1") in state.calls
    head = result.output["receipt"]["headRevision"]
    assert git(state.remote, "show", f"{head}:change.txt").splitlines()[-1] == "delivery_repair 1"


def test_no_pr_feedback_ignores_reviews(github: tuple[Path, GitHubState, str]) -> None:
    repo, state, url = github
    state.reviews = [
        {
            "user": {"login": "m"},
            "state": "CHANGES_REQUESTED",
            "commit_id": "FIRST_HEAD",
            "body": "no",
        }
    ]
    change = start_change(repo, delivery="pr", api_url=url, feedback=False)
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    assert change.signals("deliver", "delivery") == ["opened"]


def test_a_conflict_is_repaired_before_the_pull_is_ready(
    github: tuple[Path, GitHubState, str],
) -> None:
    repo, state, url = github
    state.conflict_on_first_head = True
    change = start_change(repo, delivery="pr", api_url=url)
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    assert change.signals("deliver", "delivery") == ["conflict", "opened"]
    assert (
        "conflicts with main"
        in change.completions("deliver")[0].completion.outcome.diagnostic["message"]
    )  # type: ignore


def test_ship_merges_with_the_allowed_method_and_confirms_the_revision(
    github: tuple[Path, GitHubState, str],
) -> None:
    repo, state, url = github
    state.protection = {
        "required_status_checks": {"contexts": ["tests"]},
        "required_pull_request_reviews": {"required_approving_review_count": 1},
    }
    state.check_names, state.pending_polls = ("tests",), 1
    state.reviews = [
        {
            "user": {"login": "maintainer"},
            "state": "APPROVED",
            "commit_id": "FIRST_HEAD",
            "body": "LGTM",
        }
    ]
    change = start_change(repo, delivery="ship", api_url=url)
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    receipt = result.output["receipt"]
    assert receipt["mode"] == "merge" and receipt["outcome"] == "merged"
    assert state.merged_with == "rebase"  # the only method the repository allows
    assert state.pulls[1]["merged"]
    assert git(state.remote, "rev-parse", "main") == receipt["headRevision"]


def test_ship_without_the_required_approval_is_blocked(
    github: tuple[Path, GitHubState, str],
) -> None:
    repo, state, url = github
    state.protection = {"required_pull_request_reviews": {"required_approving_review_count": 1}}
    base = git(state.remote, "rev-parse", "main")
    change = start_change(repo, delivery="ship", api_url=url)
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "approval_required"
    assert not state.pulls[1]["merged"] and git(state.remote, "rev-parse", "main") == base
    assert ("PUT", "/pulls/1/merge") not in state.calls


def test_failing_required_checks_ask_for_repair(github: tuple[Path, GitHubState, str]) -> None:
    repo, state, url = github
    state.protection = {"required_status_checks": {"contexts": ["tests"]}}
    state.check_names, state.conclusion = ("tests",), "failure"
    change = start_change(repo, delivery="pr", api_url=url)
    result = change.wait()
    assert isinstance(result, FailedResult), result
    signals = change.signals("deliver", "delivery")
    assert signals and set(signals) == {"ci_failed"}
