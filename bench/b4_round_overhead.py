"""B4: auto-research orchestration overhead per round, 100 rounds, a 10 ms experiment.

One sample is a whole 100-round run of the auto-research template with the embedded agents
on a generated task whose experiment sleeps 10 ms (a warm-forked Python script, so no
interpreter start-up counts against it). The controller runs in this process, its agents
in pooled worker processes as usual; each agent call is timed from inside its worker
(``bench.agent_timing``). A round is the time from one round's first scout starting to the
next round's; whatever part of it no agent call covers is orchestration and ledger:
reducing the history, recording events, dispatching, the harness and its hand-offs.
The experiment's own time per round is the recorded duration of its runs.

Each repeat runs the 100 rounds twice, side by side: with the experiments in their boxes
(the default) and uncontained (``--sandbox none``). What the box costs an experiment run is
the difference of the measure step's time per run between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.agent_timing import TIMES_FILE
from bench.harness import Report, Summary, verdict, versions
from zeroshot_kernel.admission.admit import admit
from zeroshot_kernel.auto_research import ResearchRecords
from zeroshot_kernel.engine.controller import Controller
from zeroshot_kernel.features import EmbeddedCode
from zeroshot_kernel.harness import local_harness, trusted_harness
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.sandbox import SandboxMode
from zeroshot_kernel.templates import TemplateOptions, expand_template

ROUNDS = 100
EXPERIMENT_S = 0.010
BAR = 0.10
TASK = "tenms"
OBJECTIVE = f"""\
import json, os, random, time
time.sleep({EXPERIMENT_S})
p = json.load(open("params.json"))
noise = random.Random(int(os.environ["ZEROSHOT_SEED"])).gauss(0.0, 0.01)
value = (p["x"] - 1.0) ** 2 + (p["y"] + 0.5) ** 2 + noise
print("ZEROSHOT_METRIC " + json.dumps({{"name": "loss", "value": value}}))
"""
SPEC = {
    "name": TASK,
    "charter": "Minimise a noisy quadratic; each run takes 10 ms.",
    "metric": "loss",
    "direction": "minimize",
    "command": ["{python}", "objective.py"],
    "budgetSeconds": 10,
    "repeats": 3,
    "preload": ["json", "random"],
    "searchSpace": [
        {"name": "x", "type": "float", "low": -5.0, "high": 5.0},
        {"name": "y", "type": "float", "low": -5.0, "high": 5.0},
    ],
}


@dataclass(frozen=True)
class RoundTimes:
    wall: float
    agents: float
    """Time covered by at least one agent call (scouts overlap each other)."""
    experiments: float
    """Recorded run time of the round's experiments (repeats may overlap)."""
    measuring: float
    """Time inside the trusted measure step (building, boxing, running, recording)."""
    runs: int
    """Experiment runs the round recorded."""

    @property
    def overhead(self) -> float:
        return self.wall - self.agents


@dataclass(frozen=True)
class Sample:
    rounds: list[RoundTimes]
    startup: float
    """Controller start to the first scout (process start-up, first imports)."""

    def fraction(self, rounds: slice = slice(1, None)) -> float:
        """Overhead over wall time, summed over ``rounds`` (default: all but the first,
        which also measures the baseline and starts the warm interpreter)."""
        chosen = self.rounds[rounds]
        return sum(r.overhead for r in chosen) / sum(r.wall for r in chosen)

    def per_run(self) -> float:
        """Measure-step time per experiment run, rounds 2-100."""
        chosen = self.rounds[1:]
        return sum(r.measuring for r in chosen) / max(1, sum(r.runs for r in chosen))


def write_task(workspace: Path) -> None:
    candidate = workspace / TASK / "candidate"
    candidate.mkdir(parents=True)
    (candidate / "objective.py").write_text(OBJECTIVE)
    (candidate / "params.json").write_text(json.dumps({"x": -4.0, "y": 4.0}))
    (workspace / TASK / "task.yaml").write_text(json.dumps(SPEC))  # JSON is YAML


@contextlib.contextmanager
def timed_agents() -> Iterator[None]:
    """Point the local and trusted harnesses at the timed wrappers of the same code."""
    agents, trusted = local_harness.embedded_agents, trusted_harness.trusted_code
    timed_agents = {name: _timed(code) for name, code in agents().items()}
    timed_trusted = {name: _timed(code) for name, code in trusted().items()}
    local_harness.embedded_agents = lambda: timed_agents  # type: ignore[assignment]
    trusted_harness.trusted_code = lambda: timed_trusted  # type: ignore[assignment]
    try:
        yield
    finally:
        local_harness.embedded_agents, trusted_harness.trusted_code = agents, trusted


def _timed(code: EmbeddedCode) -> EmbeddedCode:
    function = code.run.partition(":")[2]
    return dataclasses.replace(code, run=f"bench.agent_timing:{function}")


def sample(sandbox: SandboxMode) -> Sample:
    workspace = Path(tempfile.mkdtemp(prefix="zeroshot-b4-"))
    try:
        write_task(workspace)
        options = TemplateOptions(task=TASK, iterations=ROUNDS, sandbox=sandbox)
        expansion = expand_template("auto-research", options)
        admission = admit(expansion.graph, initial_input=expansion.input, runtime=expansion.runtime)
        if admission.admitted is None:
            raise AssertionError(f"the B4 run is not admitted: {admission.diagnostics}")
        url = f"sqlite:///{workspace / 'ledger.db'}"
        with Ledger(url) as ledger, timed_agents():
            run_id = ledger.create_run(admission.admitted.to_wire(), title="b4")
            controller = Controller(ledger, run_id, workspace=workspace)
            run_start = time.monotonic()  # the clock the workers' timings use
            result = asyncio.run(controller.run())
            run_end = time.monotonic()
        if result is None or result.status != "succeeded":
            raise AssertionError(f"the B4 run did not succeed: {result}")
        return measure(workspace, run_start, run_end)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def measure(workspace: Path, run_start: float, run_end: float) -> Sample:
    calls = [json.loads(line) for line in (workspace / TIMES_FILE).read_text().splitlines()]
    starts = sorted(c["start"] for c in calls if c["node"] == "scout_exploration")
    if len(starts) != ROUNDS:
        raise AssertionError(f"expected {ROUNDS} rounds, saw {len(starts)}")
    bounds = [*starts, run_end]
    records = ResearchRecords(workspace, TASK).snapshot()
    rounds = []
    for number, (low, high) in enumerate(itertools.pairwise(bounds), start=1):
        spans = [
            (max(c["start"], low), min(c["end"], high))
            for c in calls
            if c["end"] > low and c["start"] < high
        ]
        record = records.rounds[number]
        runs = [m.experiment for p in record.passes for m in p.measurements]
        measuring = sum(
            min(c["end"], high) - max(c["start"], low)
            for c in calls
            if c["node"] == "measure" and c["end"] > low and c["start"] < high
        )
        experiments = sum(r.duration_seconds for r in runs)
        rounds.append(RoundTimes(high - low, covered(spans), experiments, measuring, len(runs)))
    return Sample(rounds, starts[0] - run_start)


def covered(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def run(repeats: int) -> Report:
    report = Report(
        "B4",
        f"auto-research orchestration overhead per round ({ROUNDS} rounds, "
        f"{EXPERIMENT_S * 1e3:g} ms experiment), boxed and uncontained",
    )
    report.versions = versions(["zeroshot-workbench", "sqlalchemy", "pydantic", "optuna"])
    modes: tuple[SandboxMode, ...] = ("bwrap", "none")
    samples: dict[SandboxMode, list[Sample]] = {mode: [] for mode in modes}
    for repeat in range(repeats):  # side by side, alternating which goes first
        for mode in modes[repeat % 2 :] + modes[: repeat % 2]:
            samples[mode].append(sample(mode))
    ms = 1e3

    def median_of(pick: Callable[[RoundTimes], float], rounds: slice) -> Callable[[Sample], float]:
        return lambda s: statistics.median(pick(r) for r in s.rounds[rounds])

    rows = {
        "round (wall)": median_of(lambda r: r.wall, slice(1, None)),
        "inside agent calls": median_of(lambda r: r.agents, slice(1, None)),
        "  of which the measure step": median_of(lambda r: r.measuring, slice(1, None)),
        "experiment runs (recorded)": median_of(lambda r: r.experiments, slice(1, None)),
        "orchestration + ledger": median_of(lambda r: r.overhead, slice(1, None)),
        "  rounds 2-11": median_of(lambda r: r.overhead, slice(1, 11)),
        "  rounds 91-100": median_of(lambda r: r.overhead, slice(90, None)),
    }
    table = []
    for name, figure in rows.items():
        cells = [name]
        for mode in modes:
            summary = Summary.of([figure(s) for s in samples[mode]])
            cells += [
                f"{summary.median * ms:.1f}",
                f"{summary.low * ms:.1f} - {summary.high * ms:.1f}",
            ]
        table.append(cells)
    report.table(
        [
            "per round (median over rounds 2-100)",
            "boxed: ms (median of runs)",
            "spread",
            "uncontained: ms",
            "spread",
        ],
        table,
    )
    boxed = samples["bwrap"]
    fraction = Summary.of([s.fraction() for s in boxed])
    early = Summary.of([s.fraction(slice(1, 11)) for s in boxed])
    late = Summary.of([s.fraction(slice(90, None)) for s in boxed])
    versus = Summary.of(
        [
            sum(r.overhead for r in s.rounds[1:]) / sum(r.experiments for r in s.rounds[1:])
            for s in boxed
        ]
    )
    unboxed = Summary.of([s.fraction() for s in samples["none"]])
    box_cost = Summary.of(
        [a.per_run() - b.per_run() for a, b in zip(boxed, samples["none"], strict=True)]
    )
    report.table(
        ["ratio (boxed, the default)", "median", "spread (min - max)", "bar", "verdict"],
        [
            [
                "orchestration + ledger / round, rounds 2-100",
                f"{fraction.median:.3f}",
                fraction.spread(),
                f"<= {BAR:g}",
                verdict(fraction.median, BAR),
            ],
            ["  the same, rounds 2-11", f"{early.median:.3f}", early.spread(), "", ""],
            ["  the same, rounds 91-100", f"{late.median:.3f}", late.spread(), "", ""],
            ["  the same, uncontained", f"{unboxed.median:.3f}", unboxed.spread(), "", ""],
            [
                "orchestration + ledger / experiment time",
                f"{versus.median:.2f}",
                versus.spread(),
                "",
                "",
            ],
            [
                "the box's cost per experiment run (ms)",
                f"{box_cost.median * ms:.1f}",
                f"{box_cost.low * ms:.1f} - {box_cost.high * ms:.1f}",
                "",
                "",
            ],
        ],
    )
    startup = Summary.of([s.startup for s in boxed])
    report.notes += [
        f"{repeats} runs of {ROUNDS} rounds each per mode; the controller in this process, "
        "the embedded agents in its pooled worker processes, SQLite ledger in WAL mode.",
        "Boxed: each experiment's candidate copy in a bubblewrap box with its own cgroup; "
        "a warm interpreter per measured candidate (one box per run_repeats call, never "
        "shared between candidates). Uncontained: --sandbox none, one warm interpreter for "
        "the run. The box's cost per run is the measure step's time per recorded run, boxed "
        "minus uncontained.",
        "Round 1 is left out of the per-round figures: it also measures the baseline and "
        f"starts the warm interpreter. Controller start to the first scout: "
        f"{startup.median:.2f} s (median).",
        "Agent time (inside the scouts, the researcher, the reviewer and the trusted "
        "measure and adoption steps: seven executions a round) includes their own work: "
        "optuna sampling, building, hashing and writing candidates and records, forking and "
        "waiting for the experiment runs. Everything else in the round is counted as "
        "orchestration + ledger, including the harnesses computing each call's engine "
        "context from the run's events.",
    ]
    return report
