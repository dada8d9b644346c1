"""Auto-research when things go wrong, through the real engine: an experiment that hangs is
killed at its budget and recorded, a controller killed with SIGKILL mid-round is resumed
without losing a round or repeating a recorded experiment, and a node that keeps failing
ends the run with the template's own reason for it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from auto_research_agents import FAILURE
from auto_research_support import Research, copy_task, new_workspace, python_node, start
from engine_support import controller_pid, kill, resume_when_free
from support import alive, processes_named, wait_until
from zeroshot_widgets.evidence_table import rounds_table, row_html

from zeroshot_kernel.auto_research import Study, load_task
from zeroshot_kernel.auto_research.commands import round_line
from zeroshot_kernel.auto_research.template import ATTEMPTS
from zeroshot_kernel.contract.outcome import ErrorOutcome, VerifiedOutcome
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

# slow: real research runs through the engine, controllers killed
pytestmark = pytest.mark.slow

HANG = '''\
"""Hang (with a child, both named $NAME) unless at the starting point."""
import json, os, runpy, subprocess, sys, time
params = json.load(open("params.json"))
if (params["x1"], params["x2"]) != (0.0, 0.0):
    name = os.environ["NAME"]
    code = f"open('/proc/self/comm', 'w').write({name!r}); import time; time.sleep(60)"
    subprocess.Popen([sys.executable, "-c", code])
    open("/proc/self/comm", "w").write(name)
    print("hanging, with a child", flush=True)
    time.sleep(60)
runpy.run_path("objective.py", run_name="__main__")
'''

SLOW = '''\
"""Note the run (seed and parameters) in $STARTS, take a while, then measure."""
import json, os, runpy, time
params = json.load(open("params.json"))
with open(os.environ["STARTS"], "a") as out:
    out.write(f"{os.environ['ZEROSHOT_SEED']} {params['x1']!r} {params['x2']!r}\\n")
time.sleep(0.5)
runpy.run_path("objective.py", run_name="__main__")
'''


def test_a_hanging_experiment_is_killed_at_its_budget_and_recorded(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    name = "zsh" + uuid.uuid4().hex[:10]
    task = copy_task(
        workspace,
        "branin",
        repeats=2,
        budgetSeconds=1.0,
        command=["{python}", "hang.py"],
        env={"NAME": name},
    )
    (workspace / task / "candidate" / "hang.py").write_text(HANG)
    research = start(workspace, task, 2)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal  # the run went on
    view = research.view()
    assert [r.round for r in view.rounds] == [1, 2]

    hung = [r for r in view.rounds if r.experiment_status == "timed_out"]
    assert hung and hung[0].round == 1  # round 1 explores away from the start
    ledger_results = {r["round"]: r for r in research.results()}
    for round_view in hung:
        # A recorded result (status timed_out: the budget killed it), reviewed and
        # accepted as a non-adoption with its reason; the incumbent stays.
        assert not round_view.adopted and round_view.metric is None
        assert (round_view.disposition, round_view.verdict) == ("reject", "accepted")
        assert "timed_out" in round_view.justification
        assert "kept the incumbent: the experiment ended timed out" in round_view.reason
        assert round_view.incumbent_id == "c000"
        in_ledger = ledger_results[round_view.round]
        assert in_ledger["experimentStatus"] == "timed_out" and "metric" not in in_ledger
        record = research.records.read_round(round_view.round)
        assert record is not None and record.result is not None
        assert (record.result.experiment_status, record.result.disposition) == (
            "timed_out",
            "reject",
        )
        assert record.result.justification == round_view.justification
        # never compared with the incumbent: no gain or noise floor is shown as measured
        assert not record.result.compared and round_view.seeds == 0
        assert "was not compared with incumbent c000: no paired measurement" in (
            record.result.evidence
        )
        rows = Study.open(workspace, research.records.study).rows()
        (exported,) = [row for row in rows if row["round"] == round_view.round]
        assert (exported["gain"], exported["noise_floor"]) == (None, None)
        first = f"| {round_view.round} | {round_view.candidate_id} |"
        summary = (research.records.root / "summary.md").read_text().splitlines()
        (line,) = [line for line in summary if line.startswith(first)]
        assert "| n/a | n/a |" in line
        assert "; no paired measurement, failed" in round_line(round_view)
        (table_row,) = [row for row in rounds_table(view) if row.round == round_view.round]
        assert ">-<br><small>failed</small></td>" in row_html(table_row)
        manifest = research.records.read_manifest(round_view.candidate_id)
        assert manifest is not None
        [measurement] = manifest.measurements  # no repeats after a failed run
        assert measurement.experiment.status == "timed_out"
        assert 1.0 <= measurement.experiment.duration_seconds < 5.0
        assert "hanging, with a child" in measurement.experiment.output_tail
    assert processes_named(name) == [], "the budget kills the experiment and its child"


def processes_working_in(folder: Path) -> list[int]:
    """The live processes whose working directory is ``folder``: the harness workers (and
    the warm interpreter they start), the only ones that record measurements."""
    folder = folder.resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == folder:
                found.append(int(entry.name))
        except OSError:  # gone, a zombie, or not ours to look at
            continue
    return found


def test_kill_minus_nine_mid_round_then_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Uncontained (--sandbox none): the experiments log their starts to a file of the
    test's, which a box would not let them write."""
    # Short, so that resuming is quick; long enough for a busy machine to keep renewing it.
    monkeypatch.setenv("ZEROSHOT_LEASE_TTL_S", "4")
    workspace = new_workspace(tmp_path / "ws")
    starts = tmp_path / "starts.txt"
    starts.touch()
    # From a corner where branin is ~308, candidates rarely lose after one repeat, so the
    # researcher records one repeat, then runs the others: the moment to kill it.
    task = copy_task(
        workspace,
        "branin",
        params={"x1": -5.0, "x2": 0.0},
        command=["{python}", "slow.py"],
        env={"STARTS": str(starts)},
    )
    (workspace / task / "candidate" / "slow.py").write_text(SLOW)
    research = start(workspace, task, 2, sandbox="none")

    def mid_experiment() -> bool:
        active = research.run.status().status.active_executions or []
        if not any(a.node == "measure" for a in active):
            return False
        round_number = research.view().active_round
        manifest = research.records.read_manifest(f"c{round_number:03d}")
        measured = manifest is not None and any(
            m.round == round_number for m in manifest.measurements
        )
        return measured and bool(set(started_runs(starts)) - recorded_runs(research))

    wait_until(mid_experiment, 120, "a measure step with one repeat recorded, more running")
    killed_round = research.view().active_round
    pid = controller_pid(research.client, research.run.id)
    kill(pid)
    wait_until(lambda: not alive(pid), 5, "the killed controller to go")
    # Its workers notice and go too; once no process works in the workspace any more,
    # nothing more gets recorded.
    wait_until(
        lambda: not processes_working_in(workspace), 30, "the killed controller's workers to go"
    )
    recorded_at_kill = recorded_runs(research)
    in_flight = set(started_runs(starts)) - recorded_at_kill
    assert in_flight

    resume_when_free(research.client, research.run.id)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()
    assert [r.round for r in view.rounds] == [1, 2]

    # The resumed run's rounds are the ones the records hold: same candidate, parent,
    # parameters, measurement and disposition, round by round, and the same incumbent.
    state = research.records.snapshot()
    for round_view in view.rounds:
        result = state.rounds[round_view.round].result
        assert result is not None
        assert (
            result.candidate_id,
            result.parent_id,
            result.params,
            result.disposition,
            result.experiment_status,
            result.metric,
        ) == (
            round_view.candidate_id,
            round_view.parent_id,
            round_view.params,
            round_view.disposition,
            round_view.experiment_status,
            round_view.metric,
        )
        assert (
            result.metric_repeats
            == state.candidates[result.candidate_id].values[: len(result.metric_repeats)]
        )
    assert state.incumbent is not None and view.incumbent is not None
    assert state.incumbent.candidate_id == view.incumbent.candidate_id
    assert terminal.output["candidateId"] == view.rounds[-1].candidate_id

    # The lost execution was closed as a crash and retried once, in the same round.
    outcomes = [c.completion.outcome for c in research.completions("measure")]
    crashed = [i for i, o in enumerate(outcomes) if isinstance(o, ErrorOutcome)]
    assert len(crashed) == 1 and all(
        isinstance(o, VerifiedOutcome) for i, o in enumerate(outcomes) if i not in crashed
    )
    assert len(outcomes) == len(view.rounds) + 1
    # The retry carried the round's one pass on: no second pass, nothing measured twice.
    record = research.records.read_round(killed_round)
    assert record is not None and [p.status for p in record.passes] == ["done"]
    assert any("carried on" in note for note in record.passes[0].notes)
    started = started_runs(starts)
    for run in recorded_at_kill:
        assert started.count(run) == 1, f"recorded experiment {run} ran again"
    for run in set(started):
        assert started.count(run) == 1 or run in in_flight
        assert started.count(run) <= 2  # at most: the one killed, the one recorded
    # Every experiment that ran to its end is recorded exactly once: the records hold one
    # measurement per candidate and seed, and as many as the starts minus the killed ones.
    measured = recorded_runs(research)
    assert sum(len(m.measurements) for m in research.records.candidates().values()) == len(measured)
    assert len(started) - len(measured) <= len(in_flight)
    # The records agree with the ledger: each round's evidence is the measure step's.
    evidence = research.evidence()
    for round_view in view.rounds:
        recorded = state.rounds[round_view.round].passes[-1].evidence
        assert recorded is not None
        assert recorded.to_wire() == [e for e in evidence if e["round"] == round_view.round][-1]
    for number, round_record in state.rounds.items():
        for round_pass in round_record.passes:
            per_candidate = [m.candidate_id for m in round_pass.measurements]
            limit = 2 * load_repeats(research)
            assert all(per_candidate.count(c) <= limit for c in per_candidate), number


@pytest.mark.parametrize(
    ("node", "reason", "push", "never_started"),
    [
        ("scout_challenge", "scouting_failed", False, "researcher"),
        ("researcher", "research_failed", False, "measure"),
        ("reviewer", "review_failed", False, "deliver"),
        ("reviewer", "review_failed", True, "deliver"),
    ],
)
def test_an_unrecovered_error_ends_the_run_with_its_own_reason(
    tmp_path: Path,
    node: str,
    reason: str,
    push: bool,
    never_started: str,
) -> None:
    """A node that errors on every attempt ends the run at once with the template's
    reason for it (also with --push: an unreviewed round is never delivered)."""
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "branin", repeats=2)
    research = start(workspace, task, 2, push=push, nodes={node: python_node("failing")})
    terminal = research.wait()
    assert isinstance(terminal, FailedResult), terminal
    assert terminal.reason == reason
    outcomes = research.completions(node)
    assert len(outcomes) == ATTEMPTS  # retried once, then unrecovered
    for completion in outcomes:
        assert isinstance(completion.completion.outcome, ErrorOutcome)
        assert completion.detail is not None and FAILURE in completion.detail
    assert research.starts(never_started) == []
    assert len(research.starts("scout_exploration")) == 1  # no second round
    assert research.view().rounds == ()


def started_runs(starts: Path) -> list[tuple[int, float, float]]:
    """(seed, x1, x2) of every experiment run that started."""
    rows = [line.split() for line in starts.read_text().splitlines()]
    return [(int(seed), float(x1), float(x2)) for seed, x1, x2 in rows]


def recorded_runs(research: Research) -> set[tuple[int, float, float]]:
    return {
        (m.experiment.seed, float(manifest.params["x1"]), float(manifest.params["x2"]))
        for manifest in research.records.candidates().values()
        for m in manifest.measurements
    }


def load_repeats(research: Research) -> int:
    return load_task(research.workspace / research.task).spec.repeats
