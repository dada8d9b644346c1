"""A failed research run says why everywhere a researcher looks: the failing node, its
error and the worker's or the experiment's own last lines reach ``status`` (text and
``--json``), ``logs``, ``research show``, the monitor's header and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from auto_research_agents import FAILURE
from auto_research_support import copy_task, new_workspace, python_node, start
from support import zeroshot
from zeroshot_widgets.monitor import RunMonitor
from zeroshot_widgets.report import report_html

from zeroshot_kernel.ledger.events import FailedResult

# slow: real failing research runs through the engine
pytestmark = pytest.mark.slow

BROKEN_EXPERIMENT = """import sys
sys.stderr.write("loading data\\n")
sys.stderr.write("FileNotFoundError: training.csv is missing\\n")
sys.exit(3)
"""


def test_an_experiment_failing_at_the_baseline_ends_the_run_with_its_stderr(
    tmp_path: Path,
) -> None:
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "branin", repeats=2)
    (workspace / task / "candidate" / "objective.py").write_text(BROKEN_EXPERIMENT)

    ran = zeroshot(workspace, "research", "run", task, "--iterations", "2")
    assert ran.returncode == 1
    lines = ran.stdout.splitlines()
    assert "finished: failed: measure_failed" in lines  # the trusted step measures it
    assert lines[-1].startswith("failed: measure_failed (node measure: crash - ")
    assert "training.csv is missing" in lines[-1] and "exit 3" in lines[-1]
    run_id = lines[0].split(":", 1)[0].removeprefix("started ")

    for command in (["status", run_id], ["logs", run_id], ["research", "show", run_id]):
        shown = zeroshot(workspace, *command)
        assert shown.returncode == 0, shown.stderr
        assert "training.csv is missing" in shown.stdout, (command, shown.stdout)
    status = json.loads(zeroshot(workspace, "status", run_id, "--json").stdout)
    assert status["failure"]["node"] == "measure" and status["failure"]["code"] == "crash"
    show = json.loads(zeroshot(workspace, "research", "show", run_id, "--json").stdout)
    assert show["failure"]["reason"] == "measure_failed" and "activeRound" in show


def test_a_crashing_scout_is_named_in_the_monitor_and_the_report(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "branin", repeats=2)
    research = start(workspace, task, 2, nodes={"scout_synthesis": python_node("failing")})
    terminal = research.wait()
    assert isinstance(terminal, FailedResult) and terminal.reason == "scouting_failed"

    monitor = RunMonitor(research.client, research.run.id)
    try:
        monitor.refresh()
        phase, header = monitor.phase_html.value, monitor.header.value
    finally:
        monitor.close()
    assert "failed: scouting_failed" in phase and "node scout_synthesis: crash" in header
    assert FAILURE in header
    page = report_html(research.client, research.run.id)
    assert "node scout_synthesis: crash" in page and FAILURE in page
