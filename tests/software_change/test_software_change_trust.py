"""A software change you can trust: before anything is delivered, trusted code checks that
the writer did not commit, push, touch refs or config, or write into the user's checkout;
delivery follows the completion decision (``--allow-unproven`` delivers anyway, loudly);
an empty change is never a success; only the touched files are staged (build output left
out, secrets refused); and a push whose controller died is reconciled on resume. Real git
repositories with bare remotes on disk; the stand-in workers misbehave as scripted."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from engine_support import controller_pid, kill, resume_when_free
from software_change_support import (
    RUN_TIMEOUT_S,
    Change,
    git,
    repository,
    script,
    start_change,
    workers_importable,
)
from support import alive, wait_until

from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.ledger.events import (
    FailedResult,
    NodeStarted,
    SucceededResult,
    TerminalResult,
)
from zeroshot_kernel.software_change.commands import _trust_note

# slow: real software-change runs in real git repositories
pytestmark = pytest.mark.slow


def trust_message(change: Change) -> str:
    done = change.completions("trust_check")
    assert done, "the trust check did not run"
    outcome = done[-1].completion.outcome
    assert isinstance(outcome, VerifierOutcome) and isinstance(outcome.diagnostic, dict)
    return str(outcome.diagnostic["message"])


def published(remote: Path) -> str:
    return git(remote, "branch", "--list", "zeroshot/*")


def protect_main(remote: Path) -> None:
    """Branch protection on the bare remote: pushes to main are refused."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nwhile read old new ref; do\n"
        "  [ \"$ref\" = refs/heads/main ] && echo 'main is protected' && exit 1\n"
        "done\nexit 0\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)


def test_a_writer_that_commits_and_pushes_fails_the_run(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    protect_main(remote)
    main = git(remote, "rev-parse", "main")
    script(
        repo,
        {
            "worker": {
                "git": [
                    ["add", "change.txt"],
                    ["commit", "-q", "-m", "agent"],
                    ["push", "origin", "HEAD:main"],
                ]
            }
        },
    )
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "untrusted_change", result
    message = trust_message(change)
    assert "a commit was made in the run's worktree" in message, message
    assert "\n" not in message
    assert git(remote, "rev-parse", "main") == main
    assert published(remote) == ""
    assert change.completions("deliver") == []


def test_a_writer_that_pushes_a_branch_and_tags_fails_the_run(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    main = git(remote, "rev-parse", "main")
    script(
        repo,
        {
            "worker": {
                "git": [["tag", "agent-tag"], ["push", "origin", "HEAD:refs/heads/agent-branch"]]
            }
        },
    )
    change = start_change(repo, delivery="none")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "untrusted_change", result
    message = trust_message(change)
    assert "ref refs/tags/agent-tag created" in message, message
    assert "the remote's refs/heads/agent-branch was pushed" in message, message
    assert git(remote, "rev-parse", "main") == main and published(remote) == ""


def test_a_changed_remote_url_fails_the_run(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    script(
        repo,
        {"worker": {"git": [["remote", "set-url", "origin", str(tmp_path / "elsewhere.git")]]}},
    )
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "untrusted_change"
    assert "git config remote.origin.url changed" in trust_message(change)
    assert published(remote) == ""


@pytest.mark.parametrize("delivery", ["none", "push"])
def test_a_write_into_the_users_checkout_fails_the_run(tmp_path: Path, delivery: str) -> None:
    repo, remote = repository(tmp_path)
    script(repo, {"worker": {"outside": "README.md"}})
    change = start_change(repo, delivery=delivery)
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "untrusted_change", result
    assert f"the user's checkout {repo} changed (files)" in trust_message(change)
    assert published(remote) == ""


@pytest.mark.parametrize("delivery", ["none", "push"])
def test_a_change_that_changes_nothing_fails_as_empty(tmp_path: Path, delivery: str) -> None:
    repo, remote = repository(tmp_path)
    script(repo, {"worker": {"noop": True, "files": {"__pycache__/x.pyc": "built"}}})
    change = start_change(repo, delivery=delivery)
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "empty_change", result
    assert "empty change: no file differs from the base" in trust_message(change)
    assert published(remote) == ""


def test_missing_evidence_is_not_pushed(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    change = start_change(repo, delivery="push", checks=())
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "unproven", result
    message = trust_message(change)
    assert message.startswith("unproven: the completion decision is BLOCKED_BY_MISSING_EVIDENCE"), (
        message
    )
    assert published(remote) == "" and change.completions("deliver") == []
    assert message in _trust_note(change.run, result)


def test_allow_unproven_pushes_and_says_so(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    change = start_change(repo, delivery="push", checks=(), allow_unproven=True)
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    receipt = result.output["receipt"]
    assert receipt["unproven"].startswith("BLOCKED_BY_MISSING_EVIDENCE"), receipt
    assert git(remote, "rev-parse", f"zeroshot/{change.run.id}") == receipt["headRevision"]
    note = _trust_note(change.run, result)
    assert note.startswith(
        " - UNPROVEN delivery (--allow-unproven): BLOCKED_BY_MISSING_EVIDENCE"
    ), note


def test_a_proven_push_records_its_decision(tmp_path: Path) -> None:
    repo, _remote = repository(tmp_path)
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    receipt = result.output["receipt"]
    assert receipt["completion"].startswith("CANDIDATE_COMPLETE") and "unproven" not in receipt
    assert _trust_note(change.run, result) == ""


def test_build_output_is_left_out_and_only_touched_files_are_staged(tmp_path: Path) -> None:
    repo, remote = repository(tmp_path)
    script(
        repo,
        {
            "worker": {
                "files": {
                    "__pycache__/x.pyc": "built",
                    "dist/app.whl": "w",
                    "pkg/mod.egg-info/PKG-INFO": "i",
                    "src/module.py": "x = 1\n",
                }
            }
        },
    )
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, SucceededResult), result
    head = result.output["receipt"]["headRevision"]
    files = git(remote, "ls-tree", "-r", "--name-only", head).splitlines()
    assert "change.txt" in files and "src/module.py" in files
    assert not [f for f in files if f.startswith(("__pycache__", "dist/", "pkg/", ".zeroshot"))]
    assert git(remote, "diff", "--name-only", f"{head}~1", head).splitlines() == [
        "change.txt",
        "src/module.py",
    ]


@pytest.mark.parametrize(
    "secret",
    [".env", "deploy/server.pem", "config/id_rsa", "credentials-prod.json", "notes/key.txt"],
)
def test_secret_looking_files_fail_the_run(tmp_path: Path, secret: str) -> None:
    """Refused at the review snapshot, before any check or reviewer sees the change."""
    repo, remote = repository(tmp_path)
    text = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n"
        if secret.endswith(".txt")
        else "TOKEN=1\n"
    )
    script(repo, {"worker": {"files": {secret: text, "__pycache__/x.pyc": "built"}}})
    change = start_change(repo, delivery="push")
    result = change.wait()
    assert isinstance(result, FailedResult) and result.reason == "secret_files", result
    outcome = change.completions("review_snapshot")[-1].completion.outcome
    assert isinstance(outcome, VerifierOutcome) and isinstance(outcome.diagnostic, dict)
    kind = "private key" if secret.endswith(".txt") else "credential file"
    assert outcome.diagnostic["message"] == f"refusing secret-looking file(s): {secret} ({kind})"
    assert change.completions("acceptance") == [] and change.completions("trust_check") == []
    assert published(remote) == ""


HOOK = """#!/bin/sh
cat > /dev/null
echo $$ > "{started}.tmp" && mv "{started}.tmp" "{started}"  # whole, or not at all
while [ ! -e "{release}" ]; do sleep 0.05; done
exit 0
"""


@pytest.mark.parametrize("hook", ["pre-receive", "post-receive"])
def test_a_push_whose_controller_was_killed_is_reconciled_on_resume(
    tmp_path: Path, hook: str
) -> None:
    """pre-receive: the push was cut before the remote took it, so the resumed delivery
    pushes; post-receive: the remote took it before the controller died, so the resumed
    delivery records it. Either way the remote and the receipt agree, and what is delivered
    is the reviewed tree the ledger records, not the worktree's file edited meanwhile."""
    repo, remote = repository(tmp_path)
    started, release = tmp_path / "hook-started", tmp_path / "hook-release"
    path = remote / "hooks" / hook
    path.write_text(HOOK.format(started=started, release=release))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    change = start_change(repo, delivery="push")
    wait_until(started.exists, timeout=RUN_TIMEOUT_S, message="the push to reach the hook")
    pid = controller_pid(change.client, change.run.id)
    kill(pid)
    hook_pid = int(started.read_text().split()[0])
    wait_until(
        lambda: not alive(pid) and not alive(hook_pid),
        message="the push to die with its controller",
    )
    branch = f"zeroshot/{change.run.id}"
    pushed = git(remote, "branch", "--list", branch) != ""
    assert pushed == (hook == "post-receive")
    (change.worktree / "change.txt").write_text("edited after the review\n")
    release.touch()
    result = resume_from_repository(repo, change)
    assert isinstance(result, SucceededResult), result
    receipt = result.output["receipt"]
    assert git(remote, "rev-parse", branch) == receipt["headRevision"]
    assert git(remote, "show", f"{receipt['headRevision']}:change.txt") == "worker 1"
    assert git(change.worktree, "rev-list", "--count", "HEAD~1..HEAD") == "1"
    assert json.dumps(receipt).count("published") == 1


def test_a_writer_killed_with_its_controller_is_retried_on_resume(tmp_path: Path) -> None:
    """kill -9 of the controller while the writing agent works: `resume` (from the
    repository) retries the agent step within its attempts and the change completes."""
    repo, remote = repository(tmp_path)
    release = tmp_path / "release"
    script(repo, {"worker": {"hold": str(release)}})
    change = start_change(repo, delivery="push")
    started = repo / ".zeroshot" / "worker.started"
    wait_until(started.exists, timeout=RUN_TIMEOUT_S, message="the writer to start")
    pid = controller_pid(change.client, change.run.id)
    kill(pid)
    wait_until(lambda: not alive(pid), message="the controller to die")
    release.touch()
    result = resume_from_repository(repo, change)
    assert isinstance(result, SucceededResult), result
    attempts = [
        e.attempt
        for _, e in change.run.events()
        if isinstance(e, NodeStarted) and e.reference.node == "worker"
    ]
    assert attempts == [1, 2]
    assert (
        git(remote, "rev-parse", f"zeroshot/{change.run.id}")
        == result.output["receipt"]["headRevision"]
    )


def test_change_clean_removes_what_failed_runs_left(tmp_path: Path) -> None:
    """A failed run keeps its worktree and branch for inspection until `zeroshot change
    clean`; a succeeded `--delivery none` run keeps its change unless `--all`; the user's
    checkout never shows `.zeroshot/` as untracked."""
    repo, _ = repository(tmp_path)
    script(repo, {"worker": {"noop": True}})
    failed = start_change(repo, delivery="none")
    assert isinstance(failed.wait(), FailedResult)
    script(repo, {})
    kept = start_change(repo, delivery="none")
    assert isinstance(kept.wait(), SucceededResult)
    assert git(repo, "status", "--porcelain") == ""  # .zeroshot/ is in info/exclude
    ledger = ["--ledger", str(repo / ".zeroshot" / "ledger.db")]

    def clean(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "zeroshot_kernel", "change", "clean", *args, *ledger],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.splitlines()

    assert clean("--dry-run") == [f"would remove worktree and branch of {failed.run.id}"]
    assert failed.worktree.is_dir()
    assert clean() == [f"removed worktree and branch of {failed.run.id}"]
    assert not failed.worktree.exists() and kept.worktree.is_dir()
    assert git(repo, "branch", "--list", f"zeroshot/{failed.run.id}") == ""
    assert clean() == ["nothing to clean"]
    assert clean("--all") == [f"removed worktree and branch of {kept.run.id}"]
    assert git(repo, "branch", "--list", "zeroshot/*") == ""


def resume_from_repository(repo: Path, change: Change) -> TerminalResult:
    """Resume as `zeroshot resume` in the repository would (the controller carries on in
    the run's own worktree) and wait for the end."""
    resumer = Client(str(repo / ".zeroshot" / "ledger.db"), workspace=str(repo))
    try:
        with workers_importable():
            resumed = resume_when_free(resumer, change.run.id)
        return resumed.wait(RUN_TIMEOUT_S)
    finally:
        resumer.close()
