"""B4: auto-research orchestration overhead per round, 100 rounds, a 10 ms experiment.

One sample is a whole 100-round run of the auto-research template with the embedded agents
on a generated task whose experiment sleeps 10 ms (a warm-forked Python script, so no
interpreter start-up counts against it). The controller runs in this process, its agents
in pooled worker processes as usual; each agent call is timed from inside its worker
(``bench.agent_timing``). A round is the time from one round's first scout starting to the
next round's; whatever part of it no agent call covers is orchestration and ledger:
reducing the history, recording events, dispatching, the harness and its hand-offs.
The experiment's own time per round is the recorded duration of its runs.
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
from collections.abc import Iterator
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


def sample() -> Sample:
    workspace = Path(tempfile.mkdtemp(prefix="zeroshot-b4-"))
    try:
        write_task(workspace)
        expansion = expand_template("auto-research", TemplateOptions(task=TASK, iterations=ROUNDS))
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
        experiments = sum(
            m.experiment.duration_seconds for p in record.passes for m in p.measurements
        )
        rounds.append(RoundTimes(high - low, covered(spans), experiments))
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
        f"{EXPERIMENT_S * 1e3:g} ms experiment)",
    )
    report.versions = versions(["zeroshot-workbench", "sqlalchemy", "pydantic", "optuna"])
    samples = [sample() for _ in range(repeats)]
    ms = 1e3
    summary = Summary.of
    per_round = {
        "round (wall)": summary([statistics.median(r.wall for r in s.rounds[1:]) for s in samples]),
        "inside agent calls": summary(
            [statistics.median(r.agents for r in s.rounds[1:]) for s in samples]
        ),
        "experiment runs (recorded)": summary(
            [statistics.median(r.experiments for r in s.rounds[1:]) for s in samples]
        ),
        "orchestration + ledger": summary(
            [statistics.median(r.overhead for r in s.rounds[1:]) for s in samples]
        ),
        "  rounds 2-11": summary(
            [statistics.median(r.overhead for r in s.rounds[1:11]) for s in samples]
        ),
        "  rounds 91-100": summary(
            [statistics.median(r.overhead for r in s.rounds[90:]) for s in samples]
        ),
    }
    report.table(
        ["per round (median over rounds 2-100)", "ms (median of runs)", "spread (min - max)"],
        [
            [name, f"{s.median * ms:.1f}", f"{s.low * ms:.1f} - {s.high * ms:.1f}"]
            for name, s in per_round.items()
        ],
    )
    fraction = Summary.of([s.fraction() for s in samples])
    early = Summary.of([s.fraction(slice(1, 11)) for s in samples])
    late = Summary.of([s.fraction(slice(90, None)) for s in samples])
    versus = Summary.of(
        [
            sum(r.overhead for r in s.rounds[1:]) / sum(r.experiments for r in s.rounds[1:])
            for s in samples
        ]
    )
    report.table(
        ["ratio", "median", "spread (min - max)", "bar", "verdict"],
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
            [
                "orchestration + ledger / experiment time",
                f"{versus.median:.2f}",
                versus.spread(),
                "",
                "",
            ],
        ],
    )
    startup = Summary.of([s.startup for s in samples])
    report.notes += [
        f"{repeats} runs of {ROUNDS} rounds each; the controller in this process, the "
        "embedded agents in its pooled worker processes, SQLite ledger in WAL mode.",
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
