"""``zeroshot research tasks | run | show`` as a user types them, in a real subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import zeroshot

from zeroshot_kernel.auto_research import bundled_tasks
from zeroshot_kernel.client import Client

# slow: real research runs from zeroshot processes
pytestmark = pytest.mark.slow


def test_tasks_lists_the_bundled_tasks_with_their_metrics(tmp_path: Path) -> None:
    listed = zeroshot(tmp_path, "research", "tasks")
    assert listed.returncode == 0, listed.stderr
    assert bundled_tasks() == ["branin", "mlp-gpu", "quadrature", "rosenbrock", "svc-digits"]
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == bundled_tasks()
    assert "val_error (minimize)" in listed.stdout
    assert "code task (edits quadrature.py)" in listed.stdout


def test_a_bundled_task_runs_by_name_from_any_workspace(tmp_path: Path) -> None:
    (tmp_path / ".zeroshot").mkdir()
    ran = zeroshot(tmp_path, "research", "run", "branin", "--iterations", "1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run,) = Client(workspace=str(tmp_path)).runs()
    assert ran.stdout.startswith(f"started {run.run_id}: branin, 1 rounds (metric branin")
    (round_line,) = [x for x in ran.stdout.splitlines() if x.startswith("round")]
    shown = zeroshot(tmp_path, "research", "show", run.run_id)
    assert shown.returncode == 0, shown.stderr
    assert round_line in shown.stdout.splitlines()
    assert (tmp_path / ".zeroshot" / "research" / "branin" / "incumbent.json").is_file()


def test_a_folder_in_the_workspace_wins_over_a_bundled_name(tmp_path: Path) -> None:
    (tmp_path / "branin").mkdir()  # not a task: the name no longer means the bundled one
    refused = zeroshot(tmp_path, "research", "run", "branin")
    assert refused.returncode == 2
    assert "task.yaml is missing" in refused.stderr
    missing = zeroshot(tmp_path, "research", "run", "no-such-task")
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    assert "no bundled task is named 'no-such-task' (bundled: branin, " in missing.stderr
