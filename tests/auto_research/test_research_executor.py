"""Experiments on a cluster: the trusted measure step through a real dask ``LocalCluster``
(process workers that declare one GPU each), boxed experiments on the workers, a worker
killed mid-experiment, and ``zeroshot research run --dask`` as a user types it."""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from research_driver import STUDY, change, line_task, measure_pass, propose
from support import wait_until, zeroshot

from zeroshot_kernel.auto_research import ResearchRecords, load_task
from zeroshot_kernel.auto_research.executor import DaskExecutor, ExperimentsLost
from zeroshot_kernel.auto_research.measure import BASELINE_ID, MeasureRequest, measure
from zeroshot_kernel.auto_research.protocol import Evidence
from zeroshot_kernel.auto_research.seeds import study_seed
from zeroshot_kernel.auto_research.task import TaskError
from zeroshot_kernel.sandbox import Containment

# slow: a dask LocalCluster and boxed experiments
pytestmark = pytest.mark.slow

distributed = pytest.importorskip("distributed")

WORKERS = 2
SLEEP_S = 0.3
"""How long each experiment sleeps: two on one worker at once would start together."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Two process workers of two threads, each declaring one GPU: without the task's
    resources, four experiments would run at once; with them, two."""
    with distributed.LocalCluster(
        n_workers=WORKERS,
        threads_per_worker=2,
        processes=True,
        dashboard_address=None,
        resources={"GPU": 1},
    ) as local:
        yield local


@pytest.fixture()
def client(cluster: Any) -> Iterator[Any]:
    with distributed.Client(cluster.scheduler_address) as connected:
        yield connected


def gpu_task(root: Path, **fields: Any) -> Path:
    """The line task, holding one GPU per experiment, each a fraction of a second long."""
    line_task(root, budget=20.0)
    spec = json.loads((root / "task.yaml").read_text())
    spec.update({"resources": {"GPU": 1}, "repeats": 4, **fields})
    (root / "task.yaml").write_text(json.dumps(spec))
    objective = root / "candidate" / "objective.py"
    objective.write_text(f"import time\ntime.sleep({SLEEP_S})\n" + objective.read_text())
    return root


def measure_on_cluster(
    task: Path,
    workspace: Path,
    dask: str,
    change: dict[str, Any],
    *,
    pass_number: int = 1,
    **fields: Any,
) -> Evidence:
    """One pass of the trusted measure step of round 1, its experiments on ``dask``."""
    return measure(
        MeasureRequest(
            task=str(task),
            study=STUDY,
            workspace=str(workspace),
            run_id="test",
            round=1,
            pass_number=pass_number,
            pass_id=f"test/round-1/pass-{pass_number}",
            seed=study_seed(STUDY),
            change=change,
            dask=dask,
            **fields,
        )
    )


def baseline(task: Path, workspace: Path, dask: str, **fields: Any) -> None:
    """The baseline alone: the change is rejected before anything else is measured."""
    measure_on_cluster(task, workspace, dask, {"not": "a change"}, **fields)


def seeds_recorded(workspace: Path, candidate: str) -> list[int]:
    manifest = ResearchRecords(workspace, STUDY).read_manifest(candidate)
    assert manifest is not None
    return [m.experiment.seed for m in manifest.measurements]


def test_experiments_run_boxed_on_the_workers_one_per_gpu(
    tmp_path: Path, cluster: Any, client: Any
) -> None:
    task = gpu_task(tmp_path / "t")
    with distributed.get_task_stream(client) as stream:
        baseline(task, tmp_path, cluster.scheduler_address)
    ran = [t for t in stream.data if str(t["key"]).startswith("zeroshot-experiment-")]
    assert len(ran) == 4
    starts: dict[str, list[float]] = {}
    for item in ran:
        compute = next(s for s in item["startstops"] if s["action"] == "compute")
        starts.setdefault(item["worker"], []).append(compute["start"])
    for times in starts.values():  # one GPU each: the next starts once the last has ended
        times.sort()
        assert all(b - a >= SLEEP_S * 0.8 for a, b in itertools.pairwise(times)), starts
    manifest = ResearchRecords(tmp_path, STUDY).read_manifest(BASELINE_ID)
    assert manifest is not None and len(manifest.measurements) == 4
    assert all(m.experiment.status == "ok" for m in manifest.measurements)
    assert all(m.experiment.contained for m in manifest.measurements), "boxed on the worker"


def test_a_pass_measured_on_the_cluster_reads_as_one_measured_locally(
    tmp_path: Path, cluster: Any
) -> None:
    remote, local = tmp_path / "remote", tmp_path / "local"
    task = gpu_task(tmp_path / "t", repeats=2)
    changed = {
        "parent_id": "c000",
        "strategy": "exploration",
        "approach": "exploration:manual",
        "rationale": "test",
        "params": {"x": 0.5},
    }
    for workspace in (remote, local):
        workspace.mkdir()
    on_cluster = measure_on_cluster(task, remote, cluster.scheduler_address, changed)
    here = measure_pass(task, local, 1, changed)
    assert on_cluster.candidate_id == here.candidate_id == "c001"
    assert on_cluster.metric_repeats == here.metric_repeats  # same seeds, same bytes
    assert on_cluster.incumbent_repeats == here.incumbent_repeats
    assert on_cluster.supports_adoption == here.supports_adoption


KILLABLE = """
import json, os, pathlib, time
marks = pathlib.Path(os.environ["MARKS"])
(marks / f"{os.environ['ZEROSHOT_SEED']}-{os.getpid()}").touch()
deadline = time.monotonic() + 120  # never outlive a test that failed before releasing it
while not (marks / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": 1.0}))
"""


def test_a_worker_killed_mid_experiment_is_retried_and_recorded_once(
    tmp_path: Path, cluster: Any, client: Any
) -> None:
    """Uncontained, so that the test sees each start (a box's files are its own)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    task = gpu_task(tmp_path / "t", repeats=2, env={"MARKS": str(marks)})
    (task / "candidate" / "objective.py").write_text(KILLABLE)
    wait_until(lambda: len(client.scheduler_info()["workers"]) == WORKERS, 30, "both workers")
    with ThreadPoolExecutor(1) as pool:
        measured = pool.submit(
            baseline, task, tmp_path, cluster.scheduler_address, containment=Containment("none")
        )

        def started() -> list[str]:
            return sorted(p.name.split("-")[0] for p in marks.iterdir() if p.name != "release")

        try:
            wait_until(lambda: len(started()) == 2, 60, "both experiments to start")
            worker, keys = next((w, k) for w, k in client.processing().items() if k)
            seed = int(str(keys[0]).rsplit("-", 1)[1])
            (pid,) = client.run(os.getpid, workers=[worker]).values()
            os.kill(pid, signal.SIGKILL)
        finally:
            (marks / "release").touch()  # the lost run and its retry end alike
        measured.result(timeout=120)
    assert started().count(str(seed)) == 2, "the lost experiment ran again"
    recorded = seeds_recorded(tmp_path, BASELINE_ID)
    assert sorted(recorded) == sorted(set(recorded)) and seed in recorded
    assert len(recorded) == 2, "each seed recorded once, the lost run never"


PAIRED = """
import json, os, pathlib, time
marks = pathlib.Path(os.environ["MARKS"])
import random
x, seed = json.load(open("params.json"))["x"], os.environ["ZEROSHOT_SEED"]
(marks / f"{seed}-{x}").touch()
deadline = time.monotonic() + 15  # the other side's run of this seed, if it runs now
while (marks / "pair").exists() and time.monotonic() < deadline:
    if len(list(marks.glob(f"{seed}-*"))) == 2:
        (marks / f"together-{seed}-{x}").touch()
        break
    time.sleep(0.02)
noise = random.Random(seed + repr(x)).gauss(0.0, 0.1)  # undecided after two seeds
print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": x + noise}))
"""


def marked_baseline(
    tmp_path: Path, cluster: Any, client: Any, objective: str, **fields: Any
) -> tuple[Path, Path]:
    """A task whose ``objective`` leaves marks in a folder (``MARKS``), holding no GPU (the
    workers' four threads run four experiments at once), and its baseline measured
    uncontained, so that the runs' marks are seen: the task and the marks folder."""
    marks = tmp_path / "marks"
    marks.mkdir()
    task = gpu_task(tmp_path / "t", repeats=2, env={"MARKS": str(marks)}, **fields)
    spec = json.loads((task / "task.yaml").read_text())
    del spec["resources"]
    (task / "task.yaml").write_text(json.dumps(spec))
    (task / "candidate" / "objective.py").write_text(objective)
    wait_until(lambda: len(client.scheduler_info()["workers"]) == WORKERS, 30, "both workers")
    baseline(task, tmp_path, cluster.scheduler_address, containment=Containment("none"))
    return task, marks


def measure_marked(task: Path, workspace: Path, cluster: Any, x: float, **fields: Any) -> Evidence:
    """The pass after :func:`marked_baseline`'s: ``x`` measured, uncontained."""
    return measure_on_cluster(
        task,
        workspace,
        cluster.scheduler_address,
        change({"x": x}).to_wire(),
        pass_number=2,
        containment=Containment("none"),
        **fields,
    )


def test_a_look_runs_the_incumbent_and_the_candidate_at_once_on_the_cluster(
    tmp_path: Path, cluster: Any, client: Any
) -> None:
    """The race's looks at three and four seeds need seeds the incumbent lacks: on the
    cluster their runs and the candidate's runs of them are in flight together (one wave,
    not two; the task holds no GPU, so they fit on the workers' four threads).
    Uncontained, so that the runs see each other's marks."""
    task, marks = marked_baseline(tmp_path, cluster, client, PAIRED)
    (marks / "pair").touch()
    evidence = measure_marked(task, tmp_path, cluster, 0.99)
    assert evidence.candidate_id == "c001" and len(evidence.metric_repeats) >= 4
    seeds = seeds_recorded(tmp_path, BASELINE_ID)
    assert not (marks / f"together-{seeds[0]}-1.0").exists(), "the baseline ran before 'pair'"
    for seed in seeds[2:4]:
        together = sorted(p.name for p in marks.glob(f"together-{seed}-*"))
        assert together == [f"together-{seed}-0.99", f"together-{seed}-1.0"], together


STARTS = """
import json, os, pathlib, random, time
x, seed = json.load(open("params.json"))["x"], os.environ["ZEROSHOT_SEED"]
(pathlib.Path(os.environ["MARKS"]) / f"{seed}-{x}").write_text(repr(time.time()))
time.sleep(0.3)
noise = random.Random(seed + repr(x)).gauss(0.0, 0.5)  # a race that goes on
print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": x + noise}))
"""


def test_candidates_measured_at_once_run_the_incumbents_seeds_ahead(
    tmp_path: Path, cluster: Any, client: Any
) -> None:
    """Two candidates raced in step on the cluster: once a race goes past its first look,
    the incumbent's remaining seeds of the budget run at once, every one started before
    either candidate's third seed, instead of one per look beside the candidates' runs.
    Uncontained, so that the runs' start marks are seen."""
    task, marks = marked_baseline(tmp_path, cluster, client, STARTS, maxSeeds=5)
    measured = measure_marked(
        task, tmp_path, cluster, 0.999, candidates=2, proposals=[propose({"x": 0.998})]
    )
    seeds = seeds_recorded(tmp_path, BASELINE_ID)
    assert len(seeds) == 5, "the incumbent has every seed of the budget"
    records = ResearchRecords(tmp_path, STUDY)
    candidates = [c for c in records.candidates() if c != BASELINE_ID]
    assert len(candidates) == 2, candidates
    raced = {c: seeds_recorded(tmp_path, c) for c in candidates}
    assert max(map(len, raced.values())) >= 3, ("both races stopped early", measured.summary)

    def started(seed: int, x: float) -> float:
        return float((marks / f"{seed}-{x}").read_text())

    def x_of(candidate: str) -> float:
        manifest = records.read_manifest(candidate)
        assert manifest is not None
        return float(manifest.params["x"])

    third = min(started(r[2], x_of(c)) for c, r in raced.items() if len(r) >= 3)
    assert all(started(seed, 1.0) < third for seed in seeds[2:]), "the incumbent ran ahead"


def test_a_task_whose_resources_no_worker_has_is_refused_at_once(
    tmp_path: Path, cluster: Any
) -> None:
    task = load_task(gpu_task(tmp_path / "t", resources={"TPU": 1}))
    with pytest.raises(ExperimentsLost, match=r"no worker .* declares .*TPU=1"):
        DaskExecutor(cluster.scheduler_address).run(
            task, task.candidate_dir, [1], parallel=None, containment=Containment()
        )


@pytest.mark.parametrize(
    "resources", [{"GPU": 0}, {"GPU": -1}, {"bad name": 1}, {"GPU": "one"}], ids=str
)
def test_task_resources_are_validated(tmp_path: Path, resources: dict[str, Any]) -> None:
    with pytest.raises(TaskError, match="resources"):
        load_task(gpu_task(tmp_path / "t", resources=resources))


def test_research_run_with_dask_measures_every_experiment_on_the_cluster(
    tmp_path: Path, cluster: Any, client: Any
) -> None:
    (tmp_path / ".zeroshot").mkdir()
    gpu_task(tmp_path / "t", repeats=2)
    with distributed.get_task_stream(client) as stream:
        ran = zeroshot(
            tmp_path,
            "research",
            "run",
            "t",
            "--iterations",
            "1",
            "--dask",
            cluster.scheduler_address,
        )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    recorded = sum(
        len(manifest.measurements)
        for manifest in (
            ResearchRecords(tmp_path, "t").read_manifest(c)
            for c in ResearchRecords(tmp_path, "t").candidates()
        )
        if manifest is not None
    )
    shipped = [t for t in stream.data if str(t["key"]).startswith("zeroshot-experiment-")]
    assert recorded >= 2 and len(shipped) == recorded


@pytest.mark.parametrize(
    ("address", "said"),
    [("tcp://127.0.0.1", "--dask tcp://127.0.0.1:"), ("tcp://127.0.0.1:1", "cannot connect")],
)
def test_research_run_refuses_an_unusable_scheduler_in_one_line(
    tmp_path: Path, address: str, said: str
) -> None:
    (tmp_path / ".zeroshot").mkdir()
    line_task(tmp_path / "t")
    ran = zeroshot(
        tmp_path,
        "research",
        "run",
        "t",
        ZEROSHOT_DASK_SCHEDULER=address,
        DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s",
    )
    assert ran.returncode == 2
    assert said in ran.stderr and "Traceback" not in ran.stderr
    assert not (tmp_path / ".zeroshot" / "research").exists(), "nothing was recorded"
