"""Run one experiment: a fresh scratch copy of a candidate, in a box, under a hard time
budget, then its scorer; one metric.

The budget is enforced here, not by the experiment: the command runs in its own process
group (and, boxed, its own PID namespace) and the whole of it is killed when the budget is
over, so a hung experiment (or one that left children behind) never outlives it. Tasks that
declare ``preload`` modules fork their Python experiments from a warm interpreter instead
(see ``warm``), under the same rules. A task with a ``score`` command is measured by its
scorer only (``experiment_box``): whatever the candidate prints, its metric is what the
scorer printed after reading the candidate's outputs. Every way an experiment can end is a
typed :class:`ExperimentResult`, never an exception, because a crash is evidence too.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from zeroshot_kernel.auto_research.experiment_box import (
    OUTPUT_VARIABLE,
    SEED_VARIABLE,
    candidate_box,
    experiment_containment,
    experiment_env,
    scorer_box,
)
from zeroshot_kernel.auto_research.pruning import (
    MALFORMED,
    MAX_REPORTS,
    STEP_KEY,
    CurveRecorder,
    LearningCurve,
    PruneDecision,
    Pruning,
    Watch,
    read_point,
)
from zeroshot_kernel.auto_research.task import PYTHON_PLACEHOLDER, ResearchTask
from zeroshot_kernel.auto_research.warm import WarmEnd, WarmInterpreter, shared_interpreter
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.processes import STDOUT, Child
from zeroshot_kernel.sandbox import Box, Containment

METRIC_PREFIX = "ZEROSHOT_METRIC "
TAIL_CHARACTERS = 2000
READ_BYTES = 1024 * 1024
"""The end of an experiment's output that is read (for its metric line and its tail)."""
MAX_OUTPUT_ENTRIES = 10_000
"""Files and folders a candidate may leave in its outputs folder for the scorer."""
POLL_SECONDS = 0.05
"""How often a pruned task's running experiment has its new output read."""
SCAN_BYTES = 64 * 1024 * 1024
"""How much of an experiment's output is read for its intermediate metric lines."""
LINE_BYTES = 64 * 1024
"""A longer line is no metric line: it is skipped without being held."""

ExperimentStatus = Literal["ok", "crashed", "timed_out", "no_metric", "resource_limit", "pruned"]
"""``resource_limit``: the box's memory, process, file-size or CPU limit stopped it;
``pruned``: the task's pruner stopped it from its learning curve (see ``pruning``)."""

STATUS_WORDS: dict[str, str] = {
    "no_metric": "no metric",
    "timed_out": "timed out",
    "resource_limit": "over its limits",
    "not_run": "not run",
}


def status_words(status: str) -> str:
    """How views say an experiment's status (``no metric``, not ``no_metric``)."""
    return STATUS_WORDS.get(status, status)


log = logging.getLogger(__name__)

__all__ = [
    "METRIC_PREFIX",
    "OUTPUT_VARIABLE",
    "SEED_VARIABLE",
    "ExperimentResult",
    "ExperimentStatus",
    "parse_metric",
    "run_experiment",
    "run_repeats",
    "status_words",
]


class ExperimentResult(ContractModel):
    """How one run of the experiment command (and its scorer) ended."""

    status: ExperimentStatus
    metric: float | None
    seed: int
    duration_seconds: float
    exit_code: int | None
    output_tail: str
    contained: bool = False
    """Whether it ran in a box (``False`` under ``--sandbox none``, and in records made
    before experiments were boxed)."""
    limits: dict[str, str] = Field(default_factory=dict)
    """The box's limits as they were enforced (empty when uncontained)."""
    curve: LearningCurve | None = None
    """The intermediate values it reported (``None`` when it reported none)."""
    pruned: PruneDecision | None = None
    """Where and why the pruner stopped it (status ``pruned``; its last value is here,
    never in ``metric``)."""


def run_experiment(
    task: ResearchTask,
    candidate: Path,
    *,
    seed: int,
    containment: Containment | None = None,
    pruning: Pruning | None = None,
) -> ExperimentResult:
    """Run the task's experiment once on a scratch copy of ``candidate`` (see
    :func:`run_repeats`)."""
    return run_repeats(
        task, candidate, [seed], parallel=1, containment=containment, pruning=pruning
    )[0]


def run_repeats(
    task: ResearchTask,
    candidate: Path,
    seeds: Sequence[int],
    *,
    parallel: int | None = None,
    containment: Containment | None = None,
    pruning: Pruning | None = None,
) -> list[ExperimentResult]:
    """Run the experiment once per seed on fresh copies of ``candidate``, up to
    ``parallel`` at a time (default: CPU count), in boxes as ``containment`` says (default:
    boxed). The command sees ``ZEROSHOT_SEED`` (seeded noise or data splits make repeats
    differ reproducibly), ``ZEROSHOT_OUTPUT_DIR`` and the task's ``env``; ``{python}`` in a
    command is this interpreter. Each run's intermediate metric lines are recorded as its
    learning curve; with ``pruning``, a run its pruner stops is killed there and recorded
    as ``pruned``. Raises ``SandboxUnavailable`` for a code task that wants a box where
    none can be made."""
    resolved, note = experiment_containment(task, containment or Containment())
    if note:
        log.warning(note)
    workers = max(1, min(len(seeds), parallel or os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="zeroshot-experiment-") as scratch:
        runner = _Runner(task, Path(scratch), resolved, workers, pruning)
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                return list(
                    pool.map(lambda item: runner.run(item[0], item[1], candidate), enumerate(seeds))
                )
        finally:
            runner.close()


def parse_metric(output: str, name: str) -> float | None:
    """The value of the last well-formed ``ZEROSHOT_METRIC`` line naming ``name`` without
    a ``step`` (a line with one is an intermediate value: see ``pruning``)."""
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
        if STEP_KEY in document:
            continue
        number = document.get("value")
        if (
            isinstance(number, int | float)
            and not isinstance(number, bool)
            and math.isfinite(number)
        ):
            value = float(number)
    return value


@dataclass(frozen=True)
class _Place:
    """One experiment's scratch folder: the candidate's copy, its outputs, its log."""

    root: Path

    @property
    def candidate(self) -> Path:
        return self.root / "candidate"

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    @property
    def log(self) -> Path:
        return self.root / "output.log"

    @classmethod
    def make(cls, scratch: Path, index: int, candidate: Path) -> _Place:
        place = cls(scratch / str(index))
        place.root.mkdir()
        shutil.copytree(candidate, place.candidate, ignore=shutil.ignore_patterns("__pycache__"))
        place.outputs.mkdir()
        place.log.touch()
        return place


@dataclass(frozen=True)
class _Ended:
    """How the candidate's command ended."""

    timed_out: bool
    exit_code: int | None
    seconds: float
    limit: str | None = None
    """The box limit that stopped it, if one did."""
    problem: str = ""
    """Why it could not run or was not answered for, if so."""


@dataclass
class _Stream:
    """Follows one experiment's output for its intermediate metric lines: records its
    learning curve and, when watched, asks the pruner at each reported step. Reads at most
    :data:`SCAN_BYTES`, never holds more than a line of :data:`LINE_BYTES`, and stops at
    the first prune decision (the curve ends where the run was pruned)."""

    log: Path
    metric: str
    watch: Watch | None
    recorder: CurveRecorder = field(default_factory=CurveRecorder)
    decision: PruneDecision | None = None
    offset: int = 0
    pending: bytes = b""
    skipping: bool = False
    """Inside a line longer than :data:`LINE_BYTES`, until its end."""

    def read(self) -> PruneDecision | None:
        """Take in what the output gained since the last read; the prune decision, once
        there is one."""
        if self.decision is not None:
            return self.decision
        try:
            with self.log.open("rb") as handle:
                handle.seek(self.offset)
                while self.decision is None and self.offset < SCAN_BYTES:
                    chunk = handle.read(min(READ_BYTES, SCAN_BYTES - self.offset))
                    if not chunk:
                        break
                    self.offset += len(chunk)
                    self._take(chunk)
        except OSError:
            pass
        return self.decision

    def finish(self) -> PruneDecision | None:
        """Read the rest once the run has ended (an unterminated last line included)."""
        self.read()
        if self.decision is None and self.pending and not self.skipping:
            self._line(self.pending)
        self.pending = b""
        return self.decision

    def _take(self, chunk: bytes) -> None:
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        for line in lines:
            if self.skipping:
                self.skipping = False
            elif self.decision is None:
                self._line(line)
        if len(self.pending) > LINE_BYTES:
            self.pending, self.skipping = b"", True

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        point = read_point(line, METRIC_PREFIX, self.metric)
        recorder = self.recorder
        if point is None:
            return
        if point == MALFORMED or recorder.reported >= MAX_REPORTS:
            recorder.ignored += 1
            return
        assert isinstance(point, tuple)
        step, value = point
        if recorder.add(step, value) and self.watch is not None:
            self.decision = self.watch.report(step, value)


@dataclass
class _Runner:
    """Runs one candidate's experiments: cold, or forked from a warm interpreter that
    serves this candidate only when boxed (see ``warm``)."""

    task: ResearchTask
    scratch: Path
    containment: Containment
    workers: int
    pruning: Pruning | None = None
    warm: WarmInterpreter | None = None
    warm_problem: str = ""
    boxes: dict[str, str] = field(default_factory=dict)
    """The limits the candidate's boxes enforced (the same for each run)."""

    def __post_init__(self) -> None:
        spec = self.task.spec
        self.argv = [
            sys.executable if part == PYTHON_PLACEHOLDER else part for part in spec.command
        ]
        if spec.preload:
            self._start_warm()

    def _start_warm(self) -> None:
        env = experiment_env(self.task, {})
        try:
            box = candidate_box(self.task, self.scratch, self.containment, env, copies=self.workers)
            if box.contained:
                self.warm = WarmInterpreter(self.task.spec.preload, box, self.scratch / "warm.log")
            else:
                self.warm = shared_interpreter(
                    self.task.spec.preload, box, self.scratch / "warm.log"
                )
            self.boxes = box.limits
        except OSError as failed:
            self.warm_problem = f"cannot start the warm interpreter: {failed}"

    def run(self, index: int, seed: int, candidate: Path) -> ExperimentResult:
        place = _Place.make(self.scratch, index, candidate)
        values = {SEED_VARIABLE: str(seed), OUTPUT_VARIABLE: str(place.outputs.resolve())}
        env = experiment_env(self.task, values)
        watch = self.pruning.watch(seed) if self.pruning is not None else None
        stream = _Stream(place.log, self.task.spec.metric, watch)
        if self.task.spec.preload:
            ended = self._run_warm(place, env, stream)
            contained, limits = self._contained(), self.boxes
        else:
            ended, contained, limits = self._run_cold(place, env, stream)
        pruned = stream.finish()  # by the curve alone: also when its last lines came late
        output = _tail_of(place.log)
        if ended.limit and pruned is None:
            output += f"\nresource limit: {ended.limit} ({_limit_shown(ended.limit, limits)})"
        if ended.problem:
            output += f"\n{ended.problem}"
        status: ExperimentStatus
        metric: float | None
        if pruned is not None:
            status, metric = "pruned", None
            output += f"\n{pruned.describe()}"
        else:
            status, metric = _judge(self.task, ended, output)
        if status == "ok" and self.task.spec.score is not None:
            metric, scored = self._score(place, env)
            output += scored
            status = "ok" if metric is not None else "no_metric"
        return ExperimentResult(
            status=status,
            metric=metric if status == "ok" else None,
            seed=seed,
            duration_seconds=ended.seconds,
            exit_code=ended.exit_code,
            output_tail=output[-TAIL_CHARACTERS:],
            contained=contained,
            limits=limits,
            curve=stream.recorder.curve(),
            pruned=pruned,
        )

    def _contained(self) -> bool:
        return self.warm.box.contained if self.warm is not None else self.containment.contained

    def _run_cold(
        self, place: _Place, env: dict[str, str], stream: _Stream
    ) -> tuple[_Ended, bool, dict[str, str]]:
        missing = _unstartable(self.argv[0], place.candidate, env)
        if missing:
            return _Ended(False, None, 0.0, problem=missing), self.containment.contained, {}
        budget = self.task.spec.budget_seconds
        with candidate_box(
            self.task, place.candidate, self.containment, env, also_writable=[place.outputs]
        ) as box:
            started = time.monotonic()
            with place.log.open("ab") as log_file:
                child = box.spawn(self.argv, stdout=log_file, stderr=STDOUT)
            try:
                timed_out = _wait(child, budget, stream)
            finally:
                # over budget, pruned, or children left behind: the group never outlives
                # the run
                exit_code = child.terminate()
            seconds = round(time.monotonic() - started, 4)
            limit = None if stream.decision else _limit(box, timed_out, exit_code, place.log)
            return _Ended(timed_out, exit_code, seconds, limit), box.contained, box.limits

    def _run_warm(self, place: _Place, env: dict[str, str], stream: _Stream) -> _Ended:
        if self.warm is None:
            return _Ended(False, None, 0.0, problem=self.warm_problem)
        end: WarmEnd = self.warm.run(
            self.argv[1],
            self.argv[2:],
            cwd=place.candidate,
            env=env,
            log=place.log,
            budget=self.task.spec.budget_seconds,
            watch=stream.read if stream.watch is not None else None,
        )
        limit = (
            None
            if stream.decision
            else _limit(self.warm.box, end.timed_out, end.exit_code, place.log)
        )
        return _Ended(end.timed_out, end.exit_code, end.seconds, limit, end.problem)

    def _score(self, place: _Place, env: dict[str, str]) -> tuple[float | None, str]:
        """The scorer's metric for ``place``'s outputs, and what it said (its lines only
        are read for the metric)."""
        spec = self.task.spec
        assert spec.score is not None
        refused = _unreadable_outputs(place.outputs)
        if refused:
            return None, f"\n--- scorer not run: {refused}"
        argv = _argv(spec.score)
        scored = place.root / "score.log"
        with scorer_box(self.task, place.outputs.resolve(), self.containment, env) as box:
            with scored.open("wb") as log_file:
                try:
                    child = box.spawn(argv, stdout=log_file, stderr=STDOUT)
                except OSError as failed:
                    return None, f"\n--- scorer cannot start {argv[0]!r}: {failed}"
            try:
                timed_out = child.wait(spec.budget_seconds) is None
            finally:
                exit_code = child.terminate()
        said = _tail_of(scored)
        metric = parse_metric(said, spec.metric) if exit_code == 0 and not timed_out else None
        ending = "timed out" if timed_out else f"exit {exit_code}"
        return metric, f"\n--- scorer ({ending}):\n{said}"

    def close(self) -> None:
        if self.warm is not None and self.warm.box.contained:
            self.warm.close()


def _wait(child: Child, budget: float, stream: _Stream) -> bool:
    """Wait for ``child`` to end within ``budget`` (``True``: it did not), reading its
    output every :data:`POLL_SECONDS` when it is watched, until the pruner stops it."""
    if stream.watch is None:
        return child.wait(budget) is None
    deadline = time.monotonic() + budget
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        if child.wait(min(POLL_SECONDS, remaining)) is not None:
            return False
        if stream.read() is not None:
            return False


def _argv(command: Sequence[str]) -> list[str]:
    """``command`` with ``{python}`` as this interpreter."""
    return [sys.executable if part == PYTHON_PLACEHOLDER else part for part in command]


def _judge(task: ResearchTask, ended: _Ended, output: str) -> tuple[ExperimentStatus, float | None]:
    """The status of the candidate's command, and the metric it printed (read only when
    the task has no scorer)."""
    if ended.limit:
        return "resource_limit", None
    if ended.timed_out:
        return "timed_out", None
    if ended.exit_code != 0:
        return "crashed", None
    if task.spec.score is not None:
        return "ok", None  # the scorer decides
    metric = parse_metric(output, task.spec.metric)
    return ("ok" if metric is not None else "no_metric"), metric


def _limit(box: Box, timed_out: bool, exit_code: int | None, log_path: Path) -> str | None:
    """The box limit that stopped a run that failed (a run that succeeded was not
    stopped, whatever counters it touched)."""
    if not timed_out and exit_code == 0:
        return None
    return box.exceeded(exit_code, _tail_of(log_path))


def _limit_shown(limit: str, limits: dict[str, str]) -> str:
    key = {"file size": "fileSize", "cpu time": "cpu"}.get(limit, limit)
    return limits.get(key, "the box's limit")


def _unstartable(program: str, folder: Path, env: dict[str, str]) -> str:
    """Why ``program`` cannot be started from ``folder`` with ``env``'s PATH, or ``""``."""
    if "/" in program:
        path = folder / program
        found = path if os.access(path, os.X_OK) and path.is_file() else None
    else:
        which = shutil.which(program, path=env.get("PATH", os.defpath))
        found = Path(which) if which else None
    return "" if found is not None else f"cannot start {program!r}: not found or not executable"


def _unreadable_outputs(outputs: Path) -> str:
    """Why the scorer must not read ``outputs`` (a link, a pipe, a device: reading one
    could show the scorer its own answers or block it), or ``""``."""
    seen = 0
    for folder, folders, files in os.walk(outputs):
        for name in (*folders, *files):
            seen += 1
            if seen > MAX_OUTPUT_ENTRIES:
                return f"more than {MAX_OUTPUT_ENTRIES:,} entries in the outputs folder"
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                shown = os.path.relpath(os.path.join(folder, name), outputs)
                return f"the outputs hold {shown[:200]!r}, which is not a regular file or folder"
    return ""


def _tail_of(path: Path) -> str:
    """The last :data:`READ_BYTES` of ``path`` as text (an experiment may print gigabytes)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - READ_BYTES))
            return handle.read(READ_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
