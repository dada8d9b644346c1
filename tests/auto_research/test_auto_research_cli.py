"""``zeroshot research run --detach | --harness`` and ``zeroshot research show`` as a user
types them, in a real subprocess."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from auto_research_support import RUN_TIMEOUT_S, box_visible_folder, copy_task, new_workspace
from support import zeroshot

from zeroshot_kernel.auto_research.commands import diff_lines, round_line
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult

# slow: real research runs from zeroshot processes
pytestmark = pytest.mark.slow

GATE = '''\
"""Wait until the file $GATE exists, then measure: the run cannot end before the test
opens the gate."""
import os, runpy, time
while not os.path.exists(os.environ["GATE"]):
    time.sleep(0.05)
runpy.run_path("objective.py", run_name="__main__")
'''


@pytest.fixture
def gates() -> Iterator[Path]:
    """Where the gate goes: a folder the boxed experiment can see."""
    with box_visible_folder() as folder:
        yield folder


def test_detach_returns_at_once_and_the_run_finishes_on_its_own(
    tmp_path: Path, gates: Path
) -> None:
    workspace = new_workspace(tmp_path / "ws")
    gate = gates / "gate"
    task = copy_task(
        workspace,
        "branin",
        repeats=2,
        budgetSeconds=120.0,
        command=["{python}", "gate.py"],
        env={"GATE": str(gate)},
    )
    (workspace / task / "candidate" / "gate.py").write_text(GATE)

    detached = zeroshot(workspace, "research", "run", task, "--iterations", "2", "--detach")
    assert detached.returncode == 0, detached.stdout + detached.stderr
    client = Client(workspace=str(workspace))
    [summary] = client.runs()
    run_id = summary.run_id
    assert detached.stdout.splitlines() == [
        f"started {run_id}: branin, 2 rounds (metric branin, minimize), study branin",
        f"see its rounds with: zeroshot research show {run_id}; "
        f"follow its events with: zeroshot watch {run_id}",
    ]
    # Returned while the run still waits on its first experiment: nothing has ended.
    status = client.run(run_id).status().status
    assert status.terminal_result is None and status.phase != "finished"
    in_progress = zeroshot(workspace, "research", "show", run_id)
    assert in_progress.returncode == 0, in_progress.stderr
    assert in_progress.stdout.startswith(f"{run_id}: 0 reviewed round(s), round 1 in progress")

    gate.touch()  # the run carries on by itself, no CLI attached
    terminal = client.run(run_id).wait(RUN_TIMEOUT_S)
    assert isinstance(terminal, SucceededResult), terminal
    view = load_research_view(client.ledger, run_id)
    assert [r.round for r in view.rounds] == [1, 2]

    shown = zeroshot(workspace, "research", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"{run_id}: 2 reviewed round(s)"
    # Each round's line, then its change against its parent (the params file's diff).
    expected = [line for r in view.rounds for line in [round_line(r), *diff_lines(r.diff)]]
    assert lines[1 : 1 + len(expected)] == expected
    measured = [r for r in view.rounds if r.measure_status == "measured"]
    assert all("params.json" in r.diff for r in measured) and measured
    incumbent = view.incumbent
    assert incumbent is not None and incumbent.metric is not None
    origin = (
        f"adopted in round {incumbent.round}"
        if incumbent.round
        else "the incumbent this run started from"
    )
    assert lines[1 + len(expected)] == (
        f"incumbent: {incumbent.candidate_id} (metric {incumbent.metric:.6g}, {origin}); "
        f"plateau: {view.plateau} round(s)"
    )
    expected_plateau = 0
    for round_view in view.rounds:
        expected_plateau = 0 if round_view.adopted else expected_plateau + 1
    assert view.plateau == expected_plateau

    # A second run on the study numbers its rounds after the study's: round 3 is next.
    gate.unlink()
    again = zeroshot(workspace, "research", "run", task, "--iterations", "1", "--detach")
    assert again.returncode == 0, again.stdout + again.stderr
    second = next(s.run_id for s in client.runs() if s.run_id != run_id)
    continued = zeroshot(workspace, "research", "show", second)
    assert continued.stdout.startswith(f"{second}: 0 reviewed round(s), round 3 in progress")
    gate.touch()
    assert isinstance(client.run(second).wait(RUN_TIMEOUT_S), SucceededResult)
    assert [r.round for r in load_research_view(client.ledger, second).rounds] == [3]


def test_an_unknown_or_unsuitable_harness_is_refused_before_any_run(tmp_path: Path) -> None:
    (tmp_path / ".zeroshot").mkdir()
    unknown = zeroshot(
        tmp_path, "research", "run", "branin", "--harness", "bogus", "--iterations", "1"
    )
    assert unknown.returncode == 1, unknown.stdout + unknown.stderr
    diagnostics = unknown.stdout  # admission's diagnostics
    assert "runtime › harness" in diagnostics
    assert 'the harness "bogus" is not installed here' in diagnostics
    assert "installed: claude, codex, local, openai, python" in diagnostics
    unsuitable = zeroshot(
        tmp_path, "research", "run", "branin", "--harness", "python", "--iterations", "1"
    )
    assert unsuitable.returncode == 1, unsuitable.stdout + unsuitable.stderr
    assert unsuitable.stderr.startswith(
        "error: --harness python: the python harness runs Python callables, not research agents"
    )
    assert "usable here: local" in unsuitable.stderr and unsuitable.stdout == ""
    assert not unknown.stdout.startswith("started")
    assert Client(workspace=str(tmp_path)).runs() == []


def test_show_refuses_an_unknown_run(tmp_path: Path) -> None:
    (tmp_path / ".zeroshot").mkdir()
    missing = zeroshot(tmp_path, "research", "show", "run-nosuchrun000")
    assert missing.returncode == 2
    assert "no run run-nosuchrun000" in missing.stderr
