"""The experiment runner: real subprocesses, a hard budget, every ending recorded."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from research_driver import STUDY, TEMPLATES, decide, line_task, measure_pass, propose
from support import alive, read_pid_file, wait_until

from zeroshot_kernel.auto_research import ResearchRecords, load_task, run_experiment, run_repeats
from zeroshot_kernel.auto_research.agents import researcher, reviewer
from zeroshot_kernel.auto_research.protocol import ResearcherInput, ReviewerInput
from zeroshot_kernel.sandbox import Containment


def _set_x(task_root: Path, x: float) -> Path:
    (task_root / "candidate" / "params.json").write_text(json.dumps({"x": x}))
    return task_root / "candidate"


MODES = pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])


@MODES
def test_ok_run_parses_the_metric_and_is_reproducible_by_seed(tmp_path: Path, warm: bool) -> None:
    task = load_task(line_task(tmp_path / "t", warm=warm))
    first = run_experiment(task, task.candidate_dir, seed=7)
    again = run_experiment(task, task.candidate_dir, seed=7)
    other = run_experiment(task, task.candidate_dir, seed=8)
    assert first.status == "ok" and first.exit_code == 0
    assert first.metric == again.metric != other.metric
    assert first.metric is not None and abs(first.metric - 1.0) < 0.5
    assert "ZEROSHOT_METRIC" in first.output_tail
    assert not list(task.candidate_dir.glob("__pycache__")), "ran in a scratch copy"


@MODES
def test_crash_and_missing_metric_are_results(tmp_path: Path, warm: bool) -> None:
    root = line_task(tmp_path / "t", warm=warm)
    task = load_task(root)
    crashed = run_experiment(task, _set_x(root, 0.0), seed=1)
    assert crashed.status == "crashed" and crashed.exit_code == 1 and crashed.metric is None
    assert "x too small" in crashed.output_tail
    (root / "candidate" / "objective.py").write_text("print('no metric here')\n")
    silent = run_experiment(task, root / "candidate", seed=1)
    assert silent.status == "no_metric" and silent.exit_code == 0


def test_missing_command_is_a_crashed_result(tmp_path: Path) -> None:
    root = line_task(tmp_path / "t")
    spec = json.loads((root / "task.yaml").read_text())
    spec["command"] = ["/nonexistent/interpreter"]
    (root / "task.yaml").write_text(json.dumps(spec))
    result = run_experiment(load_task(root), root / "candidate", seed=0)
    assert result.status == "crashed" and result.exit_code is None
    assert "cannot start" in result.output_tail


@MODES
def test_hanging_experiment_is_killed_with_its_whole_process_group(
    tmp_path: Path, warm: bool
) -> None:
    """Uncontained (``--sandbox none``), where the pids are this machine's: the process
    group goes at the budget. (In a box its PID namespace goes with it: see
    test_research_containment.)"""
    pid_file = tmp_path / "pids"
    root = line_task(tmp_path / "t", budget=1.0, env={"PID_FILE": str(pid_file)}, warm=warm)
    task = load_task(root)
    started = time.monotonic()
    result = run_experiment(task, _set_x(root, 1.9), seed=3, containment=Containment("none"))
    assert time.monotonic() - started < 10
    assert result.status == "timed_out" and result.metric is None
    assert 1.0 <= result.duration_seconds < 10
    assert "hanging" in result.output_tail
    leader, child = map(int, read_pid_file(pid_file).split())
    wait_until(
        lambda: not alive(leader) and not alive(child), 5, "the whole process group to be gone"
    )


def test_repeats_run_in_parallel_and_keep_seed_order(tmp_path: Path) -> None:
    task = load_task(line_task(tmp_path / "t"))
    results = run_repeats(task, task.candidate_dir, [5, 6, 7], parallel=2)
    assert [r.seed for r in results] == [5, 6, 7]
    assert [r.metric for r in results] == [
        run_experiment(task, task.candidate_dir, seed=s).metric for s in (5, 6, 7)
    ]


def test_timed_out_and_crashed_runs_are_recorded_rounds(tmp_path: Path) -> None:
    """A hung or crashed experiment inside a round: recorded, not raised, review accepts."""
    root = line_task(tmp_path / "t", budget=1.0)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for number, x, status in ((1, 1.9, "timed_out"), (2, 0.05, "crashed")):
        proposed = researcher(
            ResearcherInput(
                study=STUDY,
                task=str(root),
                workspace=str(workspace),
                round=number,
                proposals=[propose({"x": x})],
            )
        )
        evidence = measure_pass(root, workspace, number, proposed)
        assert evidence.experiment_status == status and not evidence.supports_adoption
        assert len(evidence.metric_repeats) == 0 and evidence.metric is None
        record = ResearchRecords(workspace, STUDY).read_round(number)
        assert record is not None and record.passes[-1].evidence == evidence
        assert [m.experiment.status for m in record.passes[-1].measurements] == [status]
        verdict = reviewer(
            ReviewerInput(
                study=STUDY,
                task=str(root),
                workspace=str(workspace),
                change=proposed,
                evidence=evidence,
            )
        )
        assert verdict.verdict == "accepted" and not verdict.adopt, verdict.reason
        result = decide(root, workspace, evidence, verdict.verdict, verdict.adopt)
        assert result.disposition == "reject" and status in result.justification
    incumbent = ResearchRecords(workspace, STUDY).read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c000"


def test_warm_runs_measure_what_cold_runs_measure(tmp_path: Path) -> None:
    cold = load_task(line_task(tmp_path / "cold"))
    warm = load_task(line_task(tmp_path / "warm", warm=True))
    assert warm.spec.preload and not cold.spec.preload
    for seed in (1, 2):
        assert (
            run_experiment(cold, cold.candidate_dir, seed=seed).metric
            == run_experiment(warm, warm.candidate_dir, seed=seed).metric
        )
    assert load_task(TEMPLATES / "svc-digits").spec.preload, "the scikit-learn task runs warm"


def test_a_preload_module_that_does_not_import_does_not_break_the_runs(tmp_path: Path) -> None:
    root = line_task(tmp_path / "t", warm=True)
    spec = json.loads((root / "task.yaml").read_text())
    spec["preload"] = ["json", "zeroshot_no_such_module"]
    (root / "task.yaml").write_text(json.dumps(spec))
    result = run_experiment(load_task(root), root / "candidate", seed=1)
    assert result.status == "ok" and result.metric is not None
