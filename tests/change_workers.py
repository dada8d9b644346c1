"""Test workers standing in for the coding agent and the reviewers of software-change runs
(copied into each test repository, so the run's worktree can import them).

``<repo>/.zeroshot/script.json`` scripts them: for a reviewer node, the list of verdict
labels its successive calls answer (then ``accepted``); for a writer node, what it does.
Each writer call appends ``<node> <n>`` to ``change.txt`` in the worktree it runs in.
A writer's script may also make it misbehave: ``noop`` (change nothing), ``files``
(``{path: text}`` written in the worktree), ``outside`` (a path in the user's checkout it
writes to) and ``git`` (git commands it runs in the worktree, e.g. a commit and a push);
``hold`` (a path in the repository) makes its first call record ``<node>.started`` and wait
until that path exists.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from zeroshot_kernel.workers import Verdict, WorkerContext


def _repo(context: WorkerContext) -> Path:
    """The repository: a change's workers run in <repo>/.zeroshot/worktrees/<run>, the
    classifier's in the repository itself (never a folder above it: writing there would
    make it a workspace for every test beside this one)."""
    here = context.workspace.resolve()
    inside_worktree = here.parent.name == "worktrees" and here.parent.parent.name == ".zeroshot"
    return here.parents[2] if inside_worktree else here


def _count(context: WorkerContext) -> int:
    counts = _repo(context) / ".zeroshot" / "counts"
    counts.mkdir(parents=True, exist_ok=True)
    path = counts / f"{context.run_id}.{context.node}"
    number = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(number))
    return number


def _script(context: WorkerContext) -> dict[str, Any]:
    path = _repo(context) / ".zeroshot" / "script.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write(value: dict[str, Any], context: WorkerContext) -> None:
    number = _count(context)
    script = _script(context).get(context.node, {})
    if script.get("hold") and number == 1:  # say so, then wait for the test's file
        started = _repo(context) / ".zeroshot" / f"{context.node}.started"
        temporary = started.with_name(f".{started.name}.tmp")
        temporary.write_text(str(os.getpid()))
        os.replace(temporary, started)  # a reader sees the whole pid or no file
        while not (_repo(context) / script["hold"]).exists():
            time.sleep(0.05)
    if not script.get("noop"):
        target = context.workspace / script.get("file", "change.txt")
        with target.open("a") as handle:
            handle.write(f"{context.node} {number}\n")
    for name, text in script.get("files", {}).items():
        path = context.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if script.get("outside"):
        with (_repo(context) / script["outside"]).open("a") as handle:
            handle.write(f"written by {context.node} {number}\n")
    for command in script.get("git", []):
        subprocess.run(["git", *command], cwd=context.workspace, capture_output=True, check=False)


def review(value: dict[str, Any], context: WorkerContext) -> Verdict:
    """A reviewer's scripted verdicts; ``<node>.touch`` in the script makes it (wrongly)
    change the worktree it reviews."""
    number = _count(context)
    if _script(context).get(f"{context.node}.touch"):
        (context.workspace / "touched-by-reviewer.txt").write_text(f"{number}\n")
    labels = _script(context).get(context.node, [])
    label = labels[number - 1] if number <= len(labels) else "accepted"
    return Verdict(
        signals={"verdict": label}, diagnostic={"message": f"{context.node} call {number}: {label}"}
    )


def classify(value: dict[str, Any], context: WorkerContext) -> Verdict:
    """The ``--tier auto`` classifier: ratings and the rest from the script's
    ``classify`` entry (default: all six low, one coherent slice, no public contract)."""
    path = context.workspace / ".zeroshot" / "script.json"  # the classifier runs in the repo
    scripted = json.loads(path.read_text()).get("classify", {}) if path.exists() else {}
    dimensions = (
        "blast_radius",
        "concurrency",
        "security_data",
        "boundary",
        "novelty",
        "observability",
    )
    ratings = {d: scripted.get("ratings", {}).get(d, "low") for d in dimensions}
    return Verdict(
        signals=ratings,
        diagnostic={
            "hardTriggers": scripted.get("hardTriggers", []),
            "coherentSlice": scripted.get("coherentSlice", True),
            "publicContract": scripted.get("publicContract", False),
            "rationale": f"scripted for: {value['task']}",
        },
    )
