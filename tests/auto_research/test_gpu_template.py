"""The GPU research template (``research_templates/mlp-gpu``): the example users copy.

The suite has no torch, so its experiments run the numpy fallback here, for real: the same
network, loss and AdamW as the torch path (which a machine with torch checks against it).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from research_driver import TEMPLATES, drive

from zeroshot_kernel.auto_research import ResearchRecords, load_task, run_experiment
from zeroshot_kernel.auto_research.pruning import MedianPruner

TEMPLATE = TEMPLATES / "mlp-gpu"
SMALL = {"epochs": 8, "train_size": 512, "val_size": 256}
"""Fixed settings of a copy that trains in well under a second on the numpy fallback."""


def small_copy(root: Path, **settings: object) -> Path:
    shutil.copytree(TEMPLATE, root)
    params_file = root / "candidate" / "params.json"
    params = json.loads(params_file.read_text())
    params_file.write_text(json.dumps({**params, **SMALL, **settings}))
    return root


def test_the_template_declares_what_users_copy() -> None:
    task = load_task(TEMPLATE)
    spec = task.spec
    assert (spec.metric, spec.direction) == ("val_loss", "minimize")
    assert spec.preload[0] == "torch" and spec.gpu and spec.resources == {"GPU": 1}
    assert isinstance(spec.pruner, MedianPruner) and spec.pruner.warmup_steps == 5
    assert {p.name for p in spec.search_space} == {
        "lr",
        "weight_decay",
        "width",
        "depth",
        "batch_size",
        "activation",
    }
    assert task.start_params["lr"] == 0.0003
    assert "CUDA" in spec.charter and "numpy" in spec.charter


def test_the_cpu_fallback_trains_and_reports_a_curve_per_epoch(tmp_path: Path) -> None:
    task = load_task(small_copy(tmp_path / "mlp"))
    run = run_experiment(task, task.candidate_dir, seed=3)
    assert run.status == "ok", run.output_tail
    assert run.metric is not None and 0.01 < run.metric < 1.0
    curve = run.curve
    assert curve is not None and curve.steps == list(range(1, SMALL["epochs"] + 1))
    assert curve.last_value == run.metric, "the last epoch's loss is the final metric"
    assert curve.values[-1] < curve.values[0], "it learns"
    backend = "backend: torch" if _has_torch() else "backend: numpy"
    assert backend in run.output_tail
    again = run_experiment(task, task.candidate_dir, seed=3)
    assert again.metric == run.metric, "a recorded seed reproduces its value"


@pytest.mark.slow  # a real study of the template
def test_a_short_study_on_the_cpu_fallback(tmp_path: Path) -> None:
    """Two embedded rounds, for real: each candidate runs its curve, the records keep it."""
    root = small_copy(tmp_path / "mlp")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = drive(root, workspace, 2, seed=4)
    assert len(done.results) == 2
    records = ResearchRecords(workspace, "study")
    baseline = records.read_manifest("c000")
    assert baseline is not None and baseline.status == "ok"
    for measurement in baseline.measurements:
        assert measurement.experiment.curve is not None
        assert measurement.experiment.curve.reported == SMALL["epochs"]
    statuses = {r.experiment_status for r in done.results}
    assert statuses <= {"ok", "pruned", "crashed", "timed_out"}, statuses


def test_a_diverging_loss_ends_the_experiment_saying_so(tmp_path: Path) -> None:
    """A learning rate far beyond the task's space (so the script is run as it is, not
    through the task) blows the loss up: the experiment exits non-zero saying where."""
    candidate = small_copy(tmp_path / "mlp", lr=1e100, backend="numpy") / "candidate"
    ran = subprocess.run(
        [sys.executable, "train.py"],
        cwd=candidate,
        env={"ZEROSHOT_SEED": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode != 0
    assert "the loss diverged at epoch 1 (lr 1e+100)" in ran.stderr


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None
