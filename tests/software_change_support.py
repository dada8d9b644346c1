"""Test support for software-change runs: real git repositories with bare remotes on disk,
the template expanded and started through the same preparation as ``zeroshot change run``,
with the test workers of ``change_workers.py`` standing in for the agents.

The run's python workers import ``change_workers`` from this folder, put on the
``PYTHONPATH`` of the controllers these helpers start (:func:`workers_importable`; nothing
of a run's worktree is ever on a worker's path), never on the whole test process's."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auto_research_support import completions_of

from zeroshot_kernel.client import Client, Run
from zeroshot_kernel.contract.outcome import VerifierOutcome
from zeroshot_kernel.ledger.events import NodeCompleted, TerminalResult
from zeroshot_kernel.software_change.prepare import prepare, submit_change
from zeroshot_kernel.software_change.review.classify import classify
from zeroshot_kernel.templates import TemplateOptions, expand_template

TESTS = str(Path(__file__).resolve().parent)


@contextlib.contextmanager
def workers_importable() -> Iterator[None]:
    """This folder on ``PYTHONPATH`` while a controller is started (it inherits it), and
    only then: other tests' processes must not find this folder's modules."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [TESTS, before]))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


WRITERS = ("worker", "review_repair", "delivery_repair", "early_correction", "final_correction")
REVIEWERS = ("acceptance", "code", "seam_review", "integration_review")
RUN_TIMEOUT_S = 120


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repository(root: Path) -> tuple[Path, Path]:
    """``root/repo`` on main with one commit, tracking the bare
    ``root/octo/project.git`` as origin (a path that names the repository octo/project,
    as a GitHub URL would)."""
    remote, repo = root / "octo" / "project.git", root / "repo"
    remote.parent.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Test Author")
    git(repo, "config", "user.email", "author@example.invalid")
    (repo / "README.md").write_text("project\n")
    (repo / ".gitignore").write_text(".zeroshot/\n__pycache__/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    (repo / ".zeroshot").mkdir(exist_ok=True)
    return repo, remote


def script(repo: Path, document: dict[str, Any]) -> None:
    (repo / ".zeroshot" / "script.json").write_text(json.dumps(document))


def test_nodes(runtime: dict[str, Any]) -> dict[str, Any]:
    """The plan's agent bindings replaced by the test workers (python harness)."""
    nodes = dict(runtime["nodes"])
    for name in nodes:
        if name in WRITERS:
            nodes[name] = {"kind": "agent", "harness": "python", "callable": "change_workers:write"}
        elif name in REVIEWERS:
            nodes[name] = {
                "kind": "agent",
                "harness": "python",
                "callable": "change_workers:review",
            }
    return {**runtime, "nodes": nodes}


@dataclass
class Change:
    repo: Path
    client: Client
    run: Run

    def wait(self) -> TerminalResult:
        return self.run.wait(RUN_TIMEOUT_S)

    @property
    def worktree(self) -> Path:
        return self.repo / ".zeroshot" / "worktrees" / self.run.id

    def completions(self, node: str) -> list[NodeCompleted]:
        """The recorded completions of ``node``'s executions, in order."""
        return completions_of(self.run, node)

    def signals(self, node: str, name: str) -> list[str]:
        return [
            c.completion.outcome.signals[name]
            for c in self.completions(node)
            if isinstance(c.completion.outcome, VerifierOutcome)
        ]


CLASSIFIER_RUNTIME = {
    "harness": "python",
    "nodes": {"classify": {"kind": "agent", "callable": "change_workers:classify"}},
}
"""The ``--tier auto`` classifier bound to the scripted test worker."""


def start_change(
    repo: Path,
    task: str = "Add a line to change.txt",
    *,
    delivery: str = "push",
    tier: str = "standard",
    feedback: bool = True,
    checks: tuple[str, ...] | None = None,
    api_url: str | None = None,
    nodes: dict[str, Any] | None = None,
    allow_unproven: bool = False,
    client: Client | None = None,
    sandbox: str | None = None,
) -> Change:
    """Prepare and submit a change as ``zeroshot change run`` does (``auto`` runs the
    scripted classifier first), with the test workers bound (``nodes`` replaces bindings;
    ``sandbox``: the plan's sandbox mode, ``none`` for an UNCONTAINED run). Without
    ``checks`` the run proves itself with ``true``, so its completion decision can reach
    ``CANDIDATE_COMPLETE`` and delivery is not refused as unproven; ``()`` declares none."""
    if checks is None:
        checks = ("true",)
    prepared = asyncio.run(prepare(repo, delivery, allow_unproven=allow_unproven))
    client = client or Client(str(repo / ".zeroshot" / "ledger.db"), workspace=str(repo))
    classification = None
    if tier == "auto":
        with workers_importable():
            found = classify(client, task, runtime=CLASSIFIER_RUNTIME, timeout_s=RUN_TIMEOUT_S)
        tier, classification = found.tier, found.to_input()
    expansion = expand_template(
        "software-change",
        TemplateOptions(
            task=task,
            harness="claude",
            delivery=delivery,
            tier=tier,
            checks=checks,
            prepared=prepared.delivery(
                delivery,
                feedback=feedback,
                api_url=api_url,
                poll_seconds=0,
                checks_timeout_seconds=20,
            ),
            classification=classification,
        ),
    )
    runtime = test_nodes(expansion.runtime)
    runtime["nodes"] = {**runtime["nodes"], **(nodes or {})}
    if sandbox is not None:
        runtime["sandbox"] = sandbox
    with workers_importable():
        run = submit_change(
            client,
            prepared,
            graph=expansion.graph,
            input=expansion.input,
            runtime=runtime,
            title=f"software-change: {task}",
        )
    return Change(repo, client, run)


def agent_bindings(tier: str = "standard", *names: str) -> dict[str, Any]:
    """The template's own agent bindings (claude) for ``names`` (default: every writer and
    reviewer); the test support binds python test workers unless these replace them."""
    runtime = expand_template(
        "software-change", TemplateOptions(task="t", harness="claude", delivery="none", tier=tier)
    ).runtime
    wanted = names or (*WRITERS, *REVIEWERS)
    return {name: binding for name, binding in runtime["nodes"].items() if name in wanted}


def verdict(label: str, message: str = "checked") -> dict[str, Any]:
    """A stand-in reviewer's scripted answer."""
    return {
        "json": {"output": None, "signals": {"verdict": label}, "diagnostic": {"message": message}}
    }


def change_cli(
    repo: Path, root: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``zeroshot change run "a task" FLAGS`` in ``repo`` (git looks no higher than
    ``root``), with ``env`` added to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "change", "run", "a task", *flags],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(root), **(env or {})},
    )
