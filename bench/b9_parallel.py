"""B9: research throughput with 4 candidates measured at once on a 4-worker dask
``LocalCluster``, against one at a time on the same cluster.

The task's experiment sleeps (a stand-in for a GPU-bound training run: the worker waits,
its CPU does not), holds one ``GPU`` of the worker that runs it (each worker declares one)
and runs boxed, as every experiment does. The same eight candidates (parameter values near
the incumbent's, so that the gate races them over several looks) are measured by the
trusted measure step after a baseline that is not timed: in eight rounds of one candidate,
and in two rounds of four (the researcher's change and three scout proposals). A sample is
the wall time of those rounds in a fresh workspace; the figure is candidates measured per
minute, and the ratio is the two cases' times, repeat by repeat.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness import Report, Summary, ratios, require, timed, versions
from zeroshot_kernel.auto_research import ResearchRecords, load_task
from zeroshot_kernel.auto_research.executor import DaskExecutor
from zeroshot_kernel.auto_research.measure import MeasureRequest, measure, measure_baseline
from zeroshot_kernel.auto_research.protocol import Change, ScoutProposal
from zeroshot_kernel.auto_research.seeds import study_seed

WORKERS = 4
AT_ONCE = 4
CANDIDATES = 8
EXPERIMENT_S = 2.0
BAR = 3.0
STUDY = "b9"
OBJECTIVE = f"""\
import json, os, random, time
time.sleep({EXPERIMENT_S})
x = json.load(open("params.json"))["x"]
noise = random.Random(os.environ["ZEROSHOT_SEED"] + repr(x)).gauss(0.0, 0.05)
print("ZEROSHOT_METRIC " + json.dumps({{"name": "loss", "value": x + noise}}))
"""
SPEC = {
    "name": "sleeper",
    "charter": "Lower x; each run sleeps like a training step on a GPU.",
    "metric": "loss",
    "direction": "minimize",
    "command": ["{python}", "objective.py"],
    "budgetSeconds": 30,
    "repeats": 2,
    "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 2.0}],
    "resources": {"GPU": 1},
}
CASES: dict[str, tuple[str, list[float]]] = {
    "worse": (
        "clearly worse (stopped after one seed)",
        [1.5 + 0.05 * i for i in range(CANDIDATES)],
    ),
    "better": (
        "clearly better (decided on three seeds)",
        [0.5 - 0.02 * i for i in range(CANDIDATES)],
    ),
    "close": (
        "within the noise (most raced to six seeds)",
        [1.0 + 0.01 * (i + 1) * (-1) ** i for i in range(CANDIDATES)],
    ),
}
"""The candidates' x by how the gate ends their race (the incumbent's x is 1.0, the noise
0.05): a study's candidates are a mix of the three, and parallel measurement pays most for
the first."""


WARM_UP = 1.3
"""Round 1's candidate, measured before the timing: the timed rounds are those of a study
past its start, whose earlier comparisons lend a sigma to a look at one seed."""


def make_task(directory: Path) -> Path:
    root = directory / "task"
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "objective.py").write_text(OBJECTIVE)
    (root / "candidate" / "params.json").write_text(json.dumps({"x": 1.0}))
    (root / "task.yaml").write_text(json.dumps(SPEC))
    return root


def study(address: str, at_once: int, values: list[float]) -> Callable[[], float]:
    """One sample: ``values`` measured ``at_once`` per round, in a fresh workspace."""

    def sample() -> float:
        directory = Path(tempfile.mkdtemp(prefix="zeroshot-b9-"))
        try:
            task = make_task(directory)
            loaded = load_task(task)
            records = ResearchRecords(directory, STUDY)
            seed = study_seed(STUDY)
            measure_baseline(loaded, records, seed, "b9/baseline", executor=DaskExecutor(address))
            measure(request(task, directory, address, 1, [WARM_UP], seed))
            rounds = [values[i : i + at_once] for i in range(0, CANDIDATES, at_once)]
            return timed(
                lambda: [
                    measure(request(task, directory, address, number, values, seed))
                    for number, values in enumerate(rounds, start=2)
                ]
            )
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    return sample


def request(
    task: Path, workspace: Path, address: str, number: int, values: list[float], seed: int
) -> MeasureRequest:
    first, *others = values
    change = Change(
        parent_id="c000",
        strategy="exploration",
        approach="exploration:bench",
        rationale="b9",
        params={"x": first},
    )
    proposals = [
        ScoutProposal(
            strategy="synthesis", approach=f"synthesis:{x}", params={"x": x}, rationale=""
        )
        for x in others
    ]
    return MeasureRequest(
        task=str(task),
        study=STUDY,
        workspace=str(workspace),
        run_id="b9",
        round=number,
        pass_number=1,
        pass_id=f"b9/round-{number}/pass-1",
        seed=seed,
        change=change.to_wire(),
        proposals=proposals,
        dask=address,
        candidates=len(values),
    )


@contextmanager
def cluster() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=WORKERS,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        resources={"GPU": 1},
    ) as local:
        yield local.scheduler_address


def run(repeats: int) -> Report:
    require("distributed")
    report = Report("B9", f"{AT_ONCE} candidates at once on a {WORKERS}-worker LocalCluster")
    report.versions = versions(["zeroshot-workbench", "dask", "distributed"])
    samples: dict[tuple[str, int], list[float]] = {}
    with cluster() as address:
        for repeat in range(repeats):
            for case, (_, values) in CASES.items():
                order = [1, AT_ONCE] if repeat % 2 == 0 else [AT_ONCE, 1]
                for at_once in order:
                    sample = study(address, at_once, values)()
                    samples.setdefault((case, at_once), []).append(sample)
    totals = {
        at_once: [sum(samples[case, at_once][r] for case in CASES) for r in range(repeats)]
        for at_once in (1, AT_ONCE)
    }
    rows = []
    for case, (label, _) in CASES.items():
        for at_once in (1, AT_ONCE):
            summary = Summary.of(samples[case, at_once])
            rows.append(
                [
                    label,
                    "one per round (8 rounds)"
                    if at_once == 1
                    else f"{AT_ONCE} per round (2 rounds)",
                    f"{summary.median:.2f}",
                    f"{60 * CANDIDATES / summary.median:.1f}",
                    summary.spread(),
                ]
            )
    report.table(
        ["candidates", "measured", "s for 8 (median)", "candidates per minute", "spread"], rows
    )
    speedups = {case: ratios(samples[case, 1], samples[case, AT_ONCE]) for case in CASES}
    overall = ratios(totals[1], totals[AT_ONCE])
    report.table(
        ["throughput: 4 at once / one at a time", "value", "spread (min - max)", "bar", "verdict"],
        [
            *(
                [CASES[case][0], f"{ratio.median:.2f}", ratio.spread(), "", ""]
                for case, ratio in speedups.items()
            ),
            [
                "all 24 candidates",
                f"{overall.median:.2f}",
                overall.spread(),
                f"≥ {BAR:g}",
                "met"
                if overall.median >= BAR
                else f"**missed** ({overall.median / BAR:.2f}x the bar)",
            ],
        ],
    )
    report.notes += [
        f"{repeats} repeats, the two modes alternated, one cluster for all: {WORKERS} process "
        f"workers of one thread, each declaring GPU=1; the task holds GPU=1 per experiment.",
        f"Each experiment sleeps {EXPERIMENT_S} s in its box; repeats 2, so the gate's race "
        "looks at 1, 2, 3, 4, 5 then 6 paired seeds of a candidate (a look at one seed stops "
        "only a clearly worse candidate, on a sigma borrowed from earlier comparisons); the "
        "incumbent's seeds are run once and shared by every candidate: one at a time, each "
        "with the first look that needs it; four at once, all that the budget lacks as soon "
        "as a race goes past its first look. The baseline and round 1 (one candidate, "
        f"x = {WARM_UP}) are measured outside the timing: the timed rounds are a study's "
        "after its start.",
        "Where the ratio comes from: one candidate at a time takes a wave of experiments per "
        "look; four at once fill the workers, each look adding one run per candidate, so a "
        "round takes about as many waves as its longest race has looks, plus the waves of "
        "the incumbent's missing seeds. Before overheads (boxes and interpreters starting "
        "at once on a 2-core machine) that is up to 4x for every kind of candidate.",
    ]
    return report
