"""Test support for the auto-research end-to-end tests: real runs of the template through
the real engine (detached controller, embedded agents, real experiments), task copies
with small changes, the records on disk, and git repositories with bare remotes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import PROJECT_ROOT

from zeroshot_kernel.auto_research import ResearchRecords, load_task, parse_metric
from zeroshot_kernel.auto_research.studies.catalog import study_of
from zeroshot_kernel.auto_research.views import ResearchView, load_research_view
from zeroshot_kernel.client import Client, Run
from zeroshot_kernel.contract.outcome import VerifiedOutcome, VerifierOutcome
from zeroshot_kernel.ledger.events import NodeCompleted, NodeStarted, TerminalResult
from zeroshot_kernel.sandbox import SandboxMode
from zeroshot_kernel.templates import TemplateOptions, expand_template

TEMPLATES = PROJECT_ROOT / "research_templates"
BUNDLED = ("rosenbrock", "branin", "svc-digits")
AGENTS = Path(__file__).with_name("auto_research_agents.py")
RUN_TIMEOUT_S = 240


@dataclass
class Research:
    """One auto-research run in its own workspace."""

    workspace: Path
    task: str
    client: Client
    run: Run

    def wait(self) -> TerminalResult:
        return self.run.wait(RUN_TIMEOUT_S)

    def view(self) -> ResearchView:
        return load_research_view(self.client.ledger, self.run.id)

    @property
    def records(self) -> ResearchRecords:
        run_input = self.client.ledger.admitted(self.run.id)["initialInput"]
        return ResearchRecords(self.workspace, study_of(run_input))

    def completions(self, node: str) -> list[NodeCompleted]:
        """The recorded completions of ``node``'s executions, in order."""
        return completions_of(self.run, node)

    def starts(self, node: str) -> list[NodeStarted]:
        return [
            event
            for _, event in self.run.events(kinds={"node_started"})
            if isinstance(event, NodeStarted) and event.reference.node == node
        ]

    def results(self) -> list[dict[str, Any]]:
        """Every decided round's result (the trusted adoption node's output)."""
        return [
            c.completion.outcome.output["result"]
            for c in self.completions("adopt")
            if isinstance(c.completion.outcome, VerifierOutcome)
        ]

    def evidence(self) -> list[dict[str, Any]]:
        """The trusted measure step's evidence of every pass (corrections included)."""
        return [
            c.completion.outcome.output["evidence"]
            for c in self.completions("measure")
            if isinstance(c.completion.outcome, VerifiedOutcome)
        ]

    def changes(self) -> list[dict[str, Any]]:
        """Every change the researcher proposed (corrections passes included)."""
        return [
            c.completion.outcome.output["change"]
            for c in self.completions("researcher")
            if isinstance(c.completion.outcome, VerifiedOutcome)
        ]

    def verdicts(self) -> list[VerifierOutcome]:
        return [
            c.completion.outcome
            for c in self.completions("reviewer")
            if isinstance(c.completion.outcome, VerifierOutcome)
        ]


def copy_task(
    workspace: Path,
    name: str,
    *,
    as_name: str | None = None,
    params: dict[str, Any] | None = None,
    **changes: Any,
) -> str:
    """Copy a bundled task into ``workspace`` with ``task.yaml`` fields changed (camelCase
    keys) and the starting ``params.json`` values changed; returns its folder name."""
    folder = as_name or name
    shutil.copytree(TEMPLATES / name, workspace / folder)
    if changes:
        spec = load_task(workspace / folder).spec.to_wire()
        task_file = workspace / folder / "task.yaml"
        task_file.write_text(json.dumps({**spec, **changes}))  # JSON is YAML
    if params:
        params_file = workspace / folder / "candidate" / "params.json"
        start = json.loads(params_file.read_text())
        params_file.write_text(json.dumps({**start, **params}, indent=2) + "\n")
    return folder


@contextlib.contextmanager
def box_visible_folder() -> Iterator[Path]:
    """A new folder that boxed experiments can read (not write): their ``/tmp`` is private,
    and pytest's folders are below ``/tmp``. For gates a test opens while a run waits."""
    folder = Path(tempfile.mkdtemp(prefix="zeroshot-test-", dir="/var/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def new_workspace(root: Path) -> Path:
    (root / ".zeroshot").mkdir(parents=True, exist_ok=True)
    shutil.copy(AGENTS, root / AGENTS.name)  # importable by the controller's workers
    return root


def start(
    workspace: Path,
    task: str,
    iterations: int,
    *,
    push: bool = False,
    nodes: dict[str, dict[str, Any]] | None = None,
    sandbox: SandboxMode | None = None,
) -> Research:
    """Submit the expanded template; ``nodes`` overrides node bindings of its plan."""
    client = Client(workspace=str(workspace))
    options = TemplateOptions(task=task, iterations=iterations, push=push, sandbox=sandbox)
    expansion = expand_template("auto-research", options)
    runtime = {**expansion.runtime, "nodes": {**expansion.runtime["nodes"], **(nodes or {})}}
    run = client.submit(
        expansion.graph, input=expansion.input, runtime=runtime, title=f"auto-research {task}"
    )
    return Research(workspace, task, client, run)


def python_node(function: str) -> dict[str, Any]:
    """A binding that runs ``auto_research_agents:<function>`` with the python harness."""
    return {"kind": "agent", "harness": "python", "callable": f"auto_research_agents:{function}"}


STRATEGIES = ("exploration", "synthesis", "challenge")
SCRIPTED_SCOUTS = {f"scout_{s}": python_node(f"scout_scripted_{s}") for s in STRATEGIES}
"""Bindings of the three scouts to scripted ones (see :func:`script_points`)."""


def script_points(workspace: Path, points: list[dict[str, float]]) -> None:
    """What :data:`SCRIPTED_SCOUTS` propose: round n tries ``points[n - 1]``."""
    from auto_research_agents import SCRIPT

    (workspace / SCRIPT).write_text(json.dumps(points))


def reproduce(workspace: Path, task: str, candidate: Path, seed: int) -> float | None:
    """Run the task's experiment command by hand on ``candidate`` with ``seed``."""
    spec = load_task(workspace / task).spec
    argv = [sys.executable if part == "{python}" else part for part in spec.command]
    env = {**os.environ, **spec.env, "ZEROSHOT_SEED": str(seed)}
    done = subprocess.run(
        argv,
        cwd=candidate,
        env=env,
        capture_output=True,
        text=True,
        timeout=spec.budget_seconds * 3,
        check=True,
    )
    return parse_metric(done.stdout, spec.metric)


# --- git ----------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repository_with_remote(root: Path) -> tuple[Path, Path]:
    """A work tree ``root/repo`` on branch main with one commit, tracking the bare
    repository ``root/remote.git`` as ``origin``."""
    remote, repo = root / "remote.git", root / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Test Author")
    git(repo, "config", "user.email", "author@example.invalid")
    (repo / "README.md").write_text("research\n")
    (repo / ".gitignore").write_text(".zeroshot/\n__pycache__/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return repo, remote


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", message)
    git(repo, "push", "-q")


def commits(remote: Path, branch: str, since: str) -> Iterator[tuple[str, str]]:
    """(sha, full message) of the commits on ``branch`` after ``since``, oldest first."""
    shas = git(remote, "rev-list", "--reverse", f"{since}..{branch}").split()
    for sha in shas:
        yield sha, git(remote, "log", "-1", "--format=%B", sha)


def completions_of(run: Run, node: str) -> list[NodeCompleted]:
    """The recorded completions of ``node``'s executions in ``run``, in order."""
    started: dict[str, str] = {}
    found = []
    for _, event in run.events():
        if isinstance(event, NodeStarted):
            started[event.reference.execution] = event.reference.node
        elif (
            isinstance(event, NodeCompleted)
            and started[event.completion.reference.execution] == node
        ):
            found.append(event)
    return found


class ResearchModel:
    """Answers each research role by the schema it is asked for: a proposal, one change
    near a Branin optimum, an accepting review."""

    def __call__(self, body: dict[str, Any]) -> Any:
        properties = body["response_format"]["json_schema"]["schema"]["properties"]
        if "change" in properties:
            return {
                "change": {
                    "parentId": "c000",
                    "strategy": "exploration",
                    "approach": "exploration:optimum",
                    "rationale": "near pi",
                    "paramsJson": json.dumps({"x1": 3.14159, "x2": 2.275}),
                }
            }
        output = properties["output"]
        if "proposal" in output.get("properties", {}):
            return {
                "output": {
                    "proposal": {
                        "strategy": "exploration",
                        "approach": "exploration:optimum",
                        "paramsJson": json.dumps({"x1": 3.14159, "x2": 2.275}),
                        "rationale": "a known optimum",
                    }
                },
                "signals": {},
                "diagnostic": None,
            }
        return {
            "output": None,
            "signals": {"verdict": "accepted"},
            "diagnostic": {
                "reason": "measured better",
                "corrections": "",
                "title": "Move to the optimum",
                "description": "x near pi",
                "adopt": True,
            },
        }
