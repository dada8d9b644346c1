"""Run one experiment: a scratch copy of a candidate, a hard time budget, one metric line.

The budget is enforced here, not by the experiment: the command runs in its own process
group and the whole group is killed when the budget is over, so a hung experiment (or one
that left children behind) never outlives it. Tasks that declare ``preload`` modules fork
their Python experiments from a warm interpreter instead (see ``warm``), under the same
rules. Every way an experiment can end is a typed :class:`ExperimentResult`, never an
exception, because a crash is evidence too.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from zeroshot_kernel.auto_research.task import PYTHON_PLACEHOLDER, ResearchTask
from zeroshot_kernel.auto_research.warm import start_warm
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.processes import STDOUT, kill_group, spawn, wait_exit

METRIC_PREFIX = "ZEROSHOT_METRIC "
SEED_VARIABLE = "ZEROSHOT_SEED"
TAIL_CHARACTERS = 2000

ExperimentStatus = Literal["ok", "crashed", "timed_out", "no_metric"]


class ExperimentResult(ContractModel):
    """How one run of the experiment command ended."""

    status: ExperimentStatus
    metric: float | None
    seed: int
    duration_seconds: float
    exit_code: int | None
    output_tail: str


def run_experiment(task: ResearchTask, candidate: Path, *, seed: int) -> ExperimentResult:
    """Run the task's command on a scratch copy of ``candidate`` within the task's budget.

    The command sees ``ZEROSHOT_SEED`` (seeded noise or data splits make repeats differ in a
    reproducible way) and the task's ``env``; ``{python}`` in the command is this interpreter.
    """
    spec = task.spec
    argv = [sys.executable if part == PYTHON_PLACEHOLDER else part for part in spec.command]
    env = {**os.environ, **spec.env, SEED_VARIABLE: str(seed)}
    with tempfile.TemporaryDirectory(prefix="zeroshot-experiment-") as scratch:
        workdir = Path(scratch) / "candidate"
        shutil.copytree(candidate, workdir, ignore=shutil.ignore_patterns("__pycache__"))
        log_path = Path(scratch) / "output.log"
        log_path.touch()
        try:
            timed_out, exit_code, duration = _run(task, argv, workdir, env, log_path)
        except OSError as exc:
            return ExperimentResult(
                status="crashed",
                metric=None,
                seed=seed,
                duration_seconds=0.0,
                exit_code=None,
                output_tail=f"cannot start {argv[0]!r}: {exc}",
            )
        output = log_path.read_text(encoding="utf-8", errors="replace")
    metric = parse_metric(output, spec.metric)
    status: ExperimentStatus
    if timed_out:
        status = "timed_out"
    elif exit_code != 0:
        status = "crashed"
    else:
        status = "ok" if metric is not None else "no_metric"
    return ExperimentResult(
        status=status,
        metric=metric if status == "ok" else None,
        seed=seed,
        duration_seconds=duration,
        exit_code=exit_code,
        output_tail=output[-TAIL_CHARACTERS:],
    )


def run_repeats(
    task: ResearchTask, candidate: Path, seeds: Sequence[int], *, parallel: int | None = None
) -> list[ExperimentResult]:
    """Run the experiment once per seed, up to ``parallel`` at a time (default: CPU count)."""
    workers = max(1, min(len(seeds), parallel or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda s: run_experiment(task, candidate, seed=s), seeds))


def parse_metric(output: str, name: str) -> float | None:
    """The value of the last well-formed ``ZEROSHOT_METRIC`` line naming ``name``."""
    value: float | None = None
    for line in output.splitlines():
        if not line.startswith(METRIC_PREFIX):
            continue
        try:
            document = json.loads(line[len(METRIC_PREFIX) :])
        except json.JSONDecodeError:
            continue
        if not isinstance(document, dict) or document.get("name") != name:
            continue
        number = document.get("value")
        if (
            isinstance(number, int | float)
            and not isinstance(number, bool)
            and math.isfinite(number)
        ):
            value = float(number)
    return value


def _run(
    task: ResearchTask, argv: list[str], workdir: Path, env: dict[str, str], log_path: Path
) -> tuple[bool, int | None, float]:
    """Run to the end or the budget: (timed out, exit code, seconds). Raises ``OSError``."""
    budget = task.spec.budget_seconds
    if task.spec.preload:
        status = log_path.with_name("status")
        pid = start_warm(
            argv[1],
            argv[2:],
            cwd=workdir,
            env=env,
            task_env=task.spec.env,
            preload=task.spec.preload,
            log=log_path,
            status=status,
        )
        started = time.monotonic()
        timed_out = not wait_exit(pid, budget)
        kill_group(pid)  # over budget, or children left behind: the group goes
        if timed_out:
            wait_exit(pid, budget)
        duration = round(time.monotonic() - started, 4)
        try:
            return timed_out, int(status.read_text()), duration
        except (FileNotFoundError, ValueError):
            return timed_out, None, duration  # killed by a signal before it could say
    started = time.monotonic()
    with log_path.open("ab") as log:
        child = spawn(argv, cwd=workdir, env=env, stdout=log, stderr=STDOUT)
    try:
        timed_out = child.wait(budget) is None
    finally:
        # over budget, or children left behind: the group never outlives the experiment
        exit_code = child.terminate()
    return timed_out, exit_code, round(time.monotonic() - started, 4)
