"""``--push``: the trusted delivery node publishes every accepted adoption as one commit on
``zeroshot/<run-id>`` in a bare remote on disk (titled and described by the reviewer), and
nothing else: no commit for a rejected round, no git run by a research agent, nothing
adopted or published when the reviewed bytes are damaged; a workspace that cannot deliver
is refused with the reason."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from auto_research_support import (
    SCRIPTED_SCOUTS,
    Research,
    commit_all,
    commits,
    copy_task,
    git,
    new_workspace,
    python_node,
    repository_with_remote,
    script_points,
    start,
)
from support import alive, read_pid_file, wait_until

from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

# slow: real research runs through the engine, git remotes
pytestmark = pytest.mark.slow

# From the corner (-2, -1), rosenbrock is ~2509, its largest value on the domain: round 1
# (a sample of the whole domain) is an adoption, so every run below has one to deliver.
CORNER = {"x": -2.0, "y": -1.0}


def research_repository(root: Path) -> tuple[Path, Path, str]:
    repo, remote = repository_with_remote(root)
    new_workspace(repo)
    task = copy_task(repo, "rosenbrock", params=CORNER, repeats=2)
    commit_all(repo, "add the research task")
    return repo, remote, task


# Scripted points from the corner: round 1 adopts (0, 0) (~1), round 2 rejects (2, -1)
# (~2501), round 3 adopts the optimum (1, 1) (~0), each far beyond the noise (sigma 0.05).
POINTS = [{"x": 0.0, "y": 0.0}, {"x": 2.0, "y": -1.0}, {"x": 1.0, "y": 1.0}]


def test_push_commits_each_accepted_adoption_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, remote, task = research_repository(tmp_path)
    script_points(repo, POINTS)
    base = git(repo, "rev-parse", "HEAD")
    calls = git_shim(tmp_path / "shim", monkeypatch)  # from here on, every git is seen
    research = start(repo, task, 3, push=True, nodes=SCRIPTED_SCOUTS)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()
    assert [(r.round, r.adopted) for r in view.rounds] == [(1, True), (2, False), (3, True)]
    rejected = view.rounds[1]
    assert (rejected.disposition, rejected.verdict) == ("reject", "accepted")

    branch = f"zeroshot/{research.run.id}"
    published = list(commits(remote, branch, base))
    assert len(published) == 2  # one per accepted adoption, none for the rejected round
    reviews = adoption_reviews(research)
    assert sorted(reviews) == [1, 3]
    for (sha, message), round_number in zip(published, [1, 3], strict=True):
        round_view = view.rounds[round_number - 1]
        title, description = reviews[round_number]
        assert title.strip() and description.strip()
        assert message.splitlines()[0] == title
        assert lines(description) in lines(message)  # the reviewer's description, whole
        assert f"Zeroshot-Round: {round_number}" in message
        assert f"Zeroshot-Candidate: {round_view.candidate_id}" in message
        committed = git(remote, "show", f"{sha}:{task}/candidate/params.json")
        stored = research.records.source_dir(round_view.candidate_id) / "params.json"
        assert committed == stored.read_text().strip()
    assert not any("Zeroshot-Round: 2" in message for _, message in published)
    signals = [
        c.completion.outcome.signals["delivery"]
        for c in research.completions("deliver")
        if isinstance(c.completion.outcome, VerifierOutcome)
    ]
    assert signals == ["published", "skipped", "published"]
    # Delivery worked in its own worktree; the user's checkout is as it was.
    worktree = repo / ".zeroshot" / "publish" / research.run.id
    assert git(worktree, "rev-parse", "HEAD") == published[-1][0]
    assert git(repo, "rev-parse", "HEAD") == base
    assert git(repo, "status", "--porcelain") == ""

    # Only the delivery node ran git: every git process the run started has the
    # controller (where the git_delivery harness runs) as its parent; none has a worker of
    # the research agents or one of their experiments.
    assert len(research.starts("researcher")) >= 3 and len(research.starts("reviewer")) >= 3
    run_calls = [c for c in calls() if c.parent_pid != os.getpid() and not c.nested]
    assert any(c.command[:1] == ["commit"] for c in run_calls)
    pushes = [c for c in run_calls if c.command[:1] == ["push"]]
    assert pushes and all(c.guarded for c in pushes)  # a push dies with its controller
    callers = {c.caller for c in run_calls}
    assert len(callers) == 1, callers  # one process: the run's controller
    [(_, cmdline)] = callers
    assert "zeroshot_kernel.engine.controller_main" in cmdline, cmdline
    assert research.run.id in cmdline


@dataclass(frozen=True)
class GitCall:
    parent_pid: int
    parent_cmdline: str
    grandparent_pid: int
    grandparent_cmdline: str
    args: list[str]

    @property
    def command(self) -> list[str]:
        """The arguments from git's subcommand on (trusted git puts ``-c`` settings first)."""
        args = self.args
        while args[:1] == ["-c"]:
            args = args[2:]
        return args

    @property
    def guarded(self) -> bool:
        """Started under the guard that kills it when its controller dies."""
        return "agent_guard.py" in self.parent_cmdline

    @property
    def caller(self) -> tuple[int, str]:
        """The process that asked for it: the guard's parent for a guarded call."""
        if self.guarded:
            return self.grandparent_pid, self.grandparent_cmdline
        return self.parent_pid, self.parent_cmdline

    @property
    def nested(self) -> bool:
        """git started by git itself (hooks, helpers), not by a caller of its own."""
        return Path(self.parent_cmdline.split(" ", 1)[0]).name.startswith("git")


def git_shim(root: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[GitCall]]:
    """Put a ``git`` first on PATH that notes each caller (parent pid and command line)
    and its arguments, then runs the real git; returns a reader of the notes."""
    real = shutil.which("git")
    assert real is not None
    root.mkdir()
    log = root / "calls.log"
    shim = root / "git"
    shim.write_text(
        "#!/bin/sh\n"
        "caller=$(tr '\\000\\t\\n' '   ' < /proc/$PPID/cmdline)\n"
        "grand=$(cut -d' ' -f4 /proc/$PPID/stat)\n"
        "grandcaller=$(tr '\\000\\t\\n' '   ' < /proc/$grand/cmdline)\n"
        "args=$(printf '%s' \"$*\" | tr '\\t\\n' '  ')\n"
        "printf '%s\\t%s\\t%s\\t%s\\t%s\\n' "
        f'"$PPID" "$caller" "$grand" "$grandcaller" "$args" >> {shlex.quote(str(log))}\n'
        f'exec {shlex.quote(real)} "$@"\n'
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{root}{os.pathsep}{os.environ['PATH']}")

    def read() -> list[GitCall]:
        if not log.exists():
            return []
        rows = [line.split("\t") for line in log.read_text().splitlines()]
        return [
            GitCall(int(pid), cmdline.strip(), int(grand), grand_cmdline.strip(), args.split())
            for pid, cmdline, grand, grand_cmdline, args in rows
        ]

    return read


def lines(text: str) -> str:
    """Non-blank lines, right-stripped (how git's whitespace cleanup keeps a message)."""
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def adoption_reviews(research: Research) -> dict[int, tuple[str, str]]:
    """The reviewer's (title, description) of each accepted adoption, by round, from
    the ledger."""
    results = research.results()
    verdicts = research.verdicts()
    return {
        result["round"]: (verdict.diagnostic["title"], verdict.diagnostic["description"])
        for result, verdict in zip(results, verdicts, strict=True)
        if verdict.signals["verdict"] == "accepted" and result["disposition"] == "adopt"
    }


def test_a_candidate_damaged_after_its_review_is_neither_adopted_nor_published(
    tmp_path: Path,
) -> None:
    """Trusted adoption checks the candidate's bytes against the content hash that was
    measured; bytes damaged after the review (here by the reviewer itself) are not adopted,
    so delivery has nothing to publish, and the run goes on."""
    repo, remote, task = research_repository(tmp_path)
    script_points(repo, POINTS)
    research = start(
        repo,
        task,
        2,
        push=True,
        nodes={**SCRIPTED_SCOUTS, "reviewer": python_node("reviewer_damaging_adoptions")},
    )
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()
    first = view.rounds[0]
    assert (first.verdict, first.adopted, first.disposition) == ("accepted", False, "reject")
    assert "no longer match their content hash (changed params.json)" in first.justification
    verdicts = research.verdicts()
    assert verdicts[0].diagnostic["adopt"] is True  # the reviewer asked for it
    signals = [
        c.completion.outcome.signals["delivery"]
        for c in research.completions("deliver")
        if isinstance(c.completion.outcome, VerifierOutcome)
    ]
    assert signals == ["skipped", "skipped"]  # every adoption was damaged, none adopted
    incumbent = research.records.read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c000"
    assert git(remote, "branch", "--list", "zeroshot/*") == ""  # nothing published


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
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a git repository" in done.stderr
    assert Client(workspace=str(workspace)).runs() == []


HANGING_HOOK = """#!/bin/sh
echo $$ > {pid}.tmp && mv {pid}.tmp {pid}
while [ ! -e {gate} ]; do sleep 0.05; done
cat > /dev/null
"""


def ancestor(pid: int, marker: str) -> int:
    """The nearest ancestor of ``pid`` whose command line contains ``marker``."""
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
            return pid
    raise AssertionError(f"no ancestor runs {marker}")


def test_a_push_dies_with_its_controller_and_a_resumed_run_pushes_once(
    tmp_path: Path,
) -> None:
    """The remote hangs in a pre-receive hook; the controller is killed with SIGKILL: the
    guard kills the push (and the remote side it started) at once, nothing is published,
    and the resumed run finds its commit and pushes it once."""
    repo, remote, task = research_repository(tmp_path)
    script_points(repo, POINTS[:1])
    base = git(repo, "rev-parse", "HEAD")
    hook_pid, gate = tmp_path / "hook.pid", tmp_path / "gate"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        HANGING_HOOK.format(pid=shlex.quote(str(hook_pid)), gate=shlex.quote(str(gate)))
    )
    hook.chmod(0o755)
    research = start(repo, task, 1, push=True, nodes=SCRIPTED_SCOUTS)
    try:
        pid = int(read_pid_file(hook_pid, timeout=300))  # the push reached the remote's hook
        controller = ancestor(pid, "zeroshot_kernel.engine.controller_main")
        os.kill(controller, signal.SIGKILL)
        wait_until(lambda: not alive(pid), 30, "the push to die with its controller")
        branch = f"zeroshot/{research.run.id}"
        assert branch not in git(remote, "branch", "--list", branch)  # nothing published
    finally:
        gate.touch()
    resumed = research.client.resume(research.run.id)
    assert isinstance(resumed.wait(300), SucceededResult)
    published = list(commits(remote, branch, base))
    assert len(published) == 1 and "Zeroshot-Round: 1" in published[0][1]
    worktree = repo / ".zeroshot" / "publish" / research.run.id
    assert git(worktree, "rev-list", "--count", f"{base}..HEAD") == "1"  # committed once
    cleaned = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "change", "clean", "--all"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cleaned.returncode == 0, cleaned.stderr
    assert not worktree.exists()  # the publishing worktree goes with the rest
