"""B11: what pruning saves: the same study of a task with learning curves, with its median
pruner and without, on the same proposals and seeds.

The task is the GPU template (``research_templates/mlp-gpu``: a small MLP trained with
AdamW, its validation loss reported after every epoch), at a bench size (20 epochs of
1,024 samples); where torch is not installed it trains with its numpy fallback, the same
model and optimiser. A study is :data:`PROPOSALS` rounds after the baseline: each round
proposes a configuration drawn at random from the task's search space (the same sequence
for both cases: random search, so that what differs is pruning only, not where a
researcher went next), which the trusted measure step races against the incumbent on
paired seeds and the trusted adoption decides (adopted whenever the evidence supports
it). The only difference between the cases is the task's ``pruner`` (the template's:
median, warm-up 5 epochs, at least 2 earlier runs at a step).

Experiment time is the sum of the recorded runs' durations (every candidate's, the
baseline's included): what the experiments cost, whatever the orchestration adds. Final
quality is the true quality of the final incumbent: its mean validation loss on held-out
seeds no study saw (the best noisy observation would flatter the luckier case).
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.harness import Report, Summary, ratios, verdict, versions
from zeroshot_kernel.auto_research import ResearchRecords, load_task, run_experiment
from zeroshot_kernel.auto_research.adoption import AdoptionRequest, adopt
from zeroshot_kernel.auto_research.candidates import build_candidate
from zeroshot_kernel.auto_research.measure import MeasureRequest, measure
from zeroshot_kernel.auto_research.protocol import Change
from zeroshot_kernel.auto_research.seeds import derive_seed
from zeroshot_kernel.auto_research.task import BUNDLED_TASKS, Params, ResearchTask

TEMPLATE = BUNDLED_TASKS / "mlp-gpu"
SETTINGS = {"epochs": 20, "train_size": 1024, "val_size": 512}
PROPOSALS = 16
STUDY = "b11"
HELD_OUT_SEEDS = (91_001, 91_002, 91_003)
BAR_TIME = 0.6
"""Pruned experiment time over unpruned: at most 0.6 (saves at least 40 %)."""
BAR_QUALITY = 1.05
"""Final held-out loss, pruned over unpruned: equal within 5 %."""
CASES = ("pruned", "unpruned")


def install(root: Path, pruned: bool) -> ResearchTask:
    """The template at the bench size, with its pruner or without."""
    shutil.copytree(TEMPLATE, root)
    params_file = root / "candidate" / "params.json"
    params_file.write_text(json.dumps({**json.loads(params_file.read_text()), **SETTINGS}))
    if not pruned:
        lines = (root / "task.yaml").read_text().splitlines()
        kept = [line for line in lines if not line.startswith("pruner:")]
        (root / "task.yaml").write_text("\n".join(kept) + "\n")
    task = load_task(root)
    assert (task.spec.pruner is not None) == pruned
    return task


def proposals(task: ResearchTask, seed: int) -> list[Params]:
    """:data:`PROPOSALS` configurations drawn at random from the search space."""
    rng = random.Random(derive_seed("b11-proposals", seed))
    drawn = []
    for _ in range(PROPOSALS):
        params: Params = {}
        for p in task.spec.search_space:
            if p.type == "categorical":
                assert p.choices is not None
                params[p.name] = rng.choice(p.choices)
                continue
            assert p.low is not None and p.high is not None
            if p.log:
                value = math.exp(rng.uniform(math.log(p.low), math.log(p.high)))
            else:
                value = rng.uniform(p.low, p.high)
            params[p.name] = round(value) if p.type == "int" else value
        drawn.append(params)
    return drawn


def study(task: ResearchTask, workspace: Path, seed: int) -> dict[str, Any]:
    """One study; its experiment time, its runs and the final incumbent's true quality."""
    place, folder = str(workspace), str(task.root)
    for number, params in enumerate(proposals(task, seed), start=1):
        incumbent = ResearchRecords(workspace, STUDY).read_incumbent()
        change = Change(
            parent_id=incumbent.candidate_id if incumbent else "c000",
            strategy="exploration",
            approach="exploration:random",
            rationale="a random configuration (B11)",
            params=params,
        )
        evidence = measure(
            MeasureRequest(
                task=folder,
                study=STUDY,
                workspace=place,
                run_id="b11",
                round=number,
                pass_number=1,
                pass_id=f"b11/round-{number}/pass-1",
                seed=derive_seed("b11", seed),
                change=change.to_wire(),
            )
        )
        adopt(
            AdoptionRequest(
                task=folder,
                study=STUDY,
                workspace=place,
                round=number,
                evidence=evidence.to_wire(),
                verdict="accepted",
                adopt=evidence.supports_adoption,
            )
        )
    records = ResearchRecords(workspace, STUDY)
    runs = [
        m.experiment for manifest in records.candidates().values() for m in manifest.measurements
    ]
    incumbent = records.read_incumbent()
    assert incumbent is not None
    manifest = records.read_manifest(incumbent.candidate_id)
    assert manifest is not None
    candidate = workspace / "held-out"
    build_candidate(task, manifest.params, candidate)
    held_out = [run_experiment(task, candidate, seed=s).metric for s in HELD_OUT_SEEDS]
    values = [v for v in held_out if v is not None]
    return {
        "seconds": sum(r.duration_seconds for r in runs),
        "runs": len(runs),
        "pruned": sum(r.status == "pruned" for r in runs),
        "true": statistics.fmean(values) if len(values) == len(held_out) else float("inf"),
        "incumbent": incumbent.candidate_id,
    }


def run(repeats: int) -> Report:
    found: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
    for seed in range(repeats):
        order = CASES if seed % 2 == 0 else CASES[::-1]
        for case in order:
            scratch = Path(tempfile.mkdtemp(prefix="zeroshot-b11-"))
            try:
                task = install(scratch / "mlp-gpu", case == "pruned")
                workspace = scratch / "ws"
                workspace.mkdir()
                found[case].append(study(task, workspace, seed))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return report(found, repeats)


def report(found: dict[str, list[dict[str, Any]]], repeats: int) -> Report:
    backend = "torch" if _has_torch() else "numpy (torch is not installed)"
    result = Report(
        "B11",
        f"pruning on a task with learning curves ({PROPOSALS} proposals, {repeats} seeds)",
        versions=versions(["zeroshot-workbench", "numpy", "torch"]),
    )
    rows = []
    for case in CASES:
        seconds = Summary.of([f["seconds"] for f in found[case]])
        true = Summary.of([f["true"] for f in found[case]])
        rows.append(
            [
                case,
                f"{seconds.median:.1f}",
                seconds.spread(),
                f"{statistics.median(f['runs'] for f in found[case]):g}",
                f"{statistics.median(f['pruned'] for f in found[case]):g}",
                f"{true.median:.4f}",
                true.spread(),
            ]
        )
    result.table(
        [
            "case",
            "experiment s (median)",
            "spread",
            "runs",
            "pruned runs",
            "final held-out val_loss (median)",
            "spread",
        ],
        rows,
    )
    time_ratio = ratios(
        [f["seconds"] for f in found["pruned"]], [f["seconds"] for f in found["unpruned"]]
    )
    quality = ratios([f["true"] for f in found["pruned"]], [f["true"] for f in found["unpruned"]])
    result.table(
        ["ratio", "median", "spread (min - max)", "bar", "verdict"],
        [
            [
                "experiment time, pruned / unpruned",
                f"{time_ratio.median:.3f}",
                time_ratio.spread(),
                f"≤ {BAR_TIME}",
                verdict(time_ratio.median, BAR_TIME),
            ],
            [
                "final held-out loss, pruned / unpruned",
                f"{quality.median:.3f}",
                quality.spread(),
                f"≤ {BAR_QUALITY}",
                verdict(quality.median, BAR_QUALITY),
            ],
        ],
    )
    per_seed = ", ".join(
        f"seed {i}: {p['incumbent']} {p['true']:.4f} / {u['incumbent']} {u['true']:.4f}"
        for i, (p, u) in enumerate(zip(found["pruned"], found["unpruned"], strict=True))
    )
    result.notes += [
        f"Task: `research_templates/mlp-gpu` at {SETTINGS['epochs']} epochs of "
        f"{SETTINGS['train_size']:,} samples, trained with {backend}; its pruner "
        "`{kind: median, warmupSteps: 5, minRuns: 2}` for the pruned case, none for the other.",
        f"Each seed runs both studies ({PROPOSALS} rounds after the baseline, each a random "
        "configuration of the search space, the same sequence and experiment seeds for both; "
        "adopted whenever the trusted evidence supports it), alternating which goes first.",
        "Experiment time: the sum of every recorded run's duration (baseline included). "
        f"Final quality: the final incumbent's mean val_loss on {len(HELD_OUT_SEEDS)} held-out "
        "seeds no study saw.",
        f"Final incumbents and their held-out loss, pruned / unpruned: {per_seed}.",
    ]
    return result


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None
