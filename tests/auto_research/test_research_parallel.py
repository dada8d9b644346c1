"""Parallel candidates: one pass of the trusted measure step measures the researcher's
change and the round's other scout proposals at once, records each in its own row with
its own candidate id, and hands adoption the first (in proposal order) that beats the
noise; a controller killed with candidates in flight carries the pass on when retried."""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from research_driver import STUDY, change, decide, line_task, propose
from support import wait_until

from zeroshot_kernel.auto_research import ResearchRecords, load_task
from zeroshot_kernel.auto_research.measure import (
    BASELINE_ID,
    MeasureRequest,
    measure,
    measure_baseline,
)
from zeroshot_kernel.auto_research.protocol import Evidence
from zeroshot_kernel.auto_research.seeds import study_seed
from zeroshot_kernel.auto_research.studies.catalog import in_flight, in_flight_text
from zeroshot_kernel.sandbox import Containment

PROPOSALS = [
    propose({"x": 0.3}, "exploration:low"),
    propose({"x": 0.5}, "synthesis:same"),  # the researcher's own: measured once
    propose({"x": 1.2}, "challenge:worse"),
]


def request(task: Path, workspace: Path, candidates: int | None, **fields: Any) -> MeasureRequest:
    return MeasureRequest(
        **{
            "task": str(task),
            "study": STUDY,
            "workspace": str(workspace),
            "run_id": "test",
            "round": 1,
            "pass_number": 1,
            "pass_id": "test/round-1/pass-1",
            "seed": study_seed(STUDY),
            "change": change({"x": 0.5}).to_wire(),
            "proposals": PROPOSALS,
            "candidates": candidates,
            **fields,
        }
    )


def records(workspace: Path) -> ResearchRecords:
    return ResearchRecords(workspace, STUDY)


def assert_each_seed_once(workspace: Path) -> None:
    for candidate_id, manifest in records(workspace).candidates().items():
        seeds = [m.experiment.seed for m in manifest.measurements]
        assert len(seeds) == len(set(seeds)), f"{candidate_id} measured a seed twice"


def test_a_parallel_pass_reads_as_sequential_passes(tmp_path: Path) -> None:
    task = line_task(tmp_path / "t")
    evidence = measure(request(task, tmp_path, 3))
    record = records(tmp_path).read_round(1)
    assert record is not None
    rows = [row.evidence for row in record.passes]
    assert all(isinstance(e, Evidence) and e.status == "measured" for e in rows)
    by_change = {row.change.params["x"]: row.evidence for row in record.passes if row.change}
    assert sorted(by_change) == [0.3, 0.5, 1.2], "the duplicate proposal is measured once"
    ids = [e.candidate_id for e in rows if e is not None]
    assert len(ids) == len(set(ids)) == 3
    assert set(records(tmp_path).candidates()) == {BASELINE_ID, *ids}
    researchers = by_change[0.5]
    assert researchers is not None and researchers.candidate_id == "c001", "in proposal order"
    assert rows[-1] == evidence, "the row the round decides on is its last"
    assert evidence.supports_adoption and evidence.candidate_id == "c001"
    assert_each_seed_once(tmp_path)
    for e in rows:
        assert e is not None and e.seeds[: len(evidence.seeds)] == evidence.seeds[: len(e.seeds)]
    result = decide(task, tmp_path, evidence)
    assert result.disposition == "adopt" and result.candidate_id == "c001"


def test_adoption_takes_the_first_candidate_that_beats_the_noise(tmp_path: Path) -> None:
    """The researcher's change is worse than the incumbent: the next proposal in order
    that beats it is the round's decided row."""
    task = line_task(tmp_path / "t")
    worse = request(task, tmp_path, 3, change=change({"x": 1.4}).to_wire())
    evidence = measure(worse)
    assert evidence.supports_adoption
    record = records(tmp_path).read_round(1)
    assert record is not None and record.passes[-1].evidence == evidence
    assert record.passes[-1].change is not None
    assert record.passes[-1].change.params == {"x": 0.3}
    assert [p.pass_id for p in record.passes[:2]] == [
        "test/round-1/pass-1",
        "test/round-1/pass-1/candidate-3",
    ]


def test_one_candidate_at_a_time_is_the_sequential_pass(tmp_path: Path) -> None:
    task = line_task(tmp_path / "t")
    evidence = measure(request(task, tmp_path, 1))
    record = records(tmp_path).read_round(1)
    assert record is not None and [p.evidence for p in record.passes] == [evidence]
    assert set(records(tmp_path).candidates()) == {BASELINE_ID, "c001"}


def test_the_task_sets_the_candidates_measured_at_once(tmp_path: Path) -> None:
    task = line_task(tmp_path / "t")
    spec = json.loads((task / "task.yaml").read_text())
    (task / "task.yaml").write_text(json.dumps({**spec, "parallel": 2}))
    measure(request(task, tmp_path, None))
    record = records(tmp_path).read_round(1)
    assert record is not None and len(record.passes) == 2


HELD = """
import json, os, pathlib, time
marks = pathlib.Path(os.environ["MARKS"])
x = json.load(open("params.json"))["x"]
(marks / f"{x}-{os.environ['ZEROSHOT_SEED']}-{os.getpid()}").touch()
deadline = time.monotonic() + 120  # never outlive a test that failed before releasing it
while not (marks / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": x}))
"""

CONTROLLER = """
import sys
from zeroshot_kernel.auto_research.measure import MeasureRequest, measure
from zeroshot_kernel.auto_research.protocol import ScoutProposal
from zeroshot_kernel.sandbox import Containment
import json
fields = json.loads(sys.argv[1])
fields["proposals"] = [ScoutProposal.from_wire(p) for p in fields["proposals"]]
measure(MeasureRequest(**fields, containment=Containment("none")))
"""


def test_a_controller_killed_with_candidates_in_flight_carries_the_pass_on(
    tmp_path: Path,
) -> None:
    """Uncontained, so that the test sees each experiment start."""
    marks = tmp_path / "marks"
    marks.mkdir()
    task = line_task(tmp_path / "t", budget=60.0, env={"MARKS": str(marks)})
    (task / "candidate" / "objective.py").write_text(HELD)
    (marks / "release").touch()
    pass_ = request(task, tmp_path, 3, containment=Containment("none"))
    measure_baseline(
        load_task(task),
        records(tmp_path),
        pass_.seed,
        "test/baseline",
        containment=Containment("none"),
    )
    for mark in marks.iterdir():
        mark.unlink()
    baseline_runs = len(records(tmp_path).candidates()[BASELINE_ID].measurements)
    fields = {
        "task": pass_.task,
        "study": STUDY,
        "workspace": pass_.workspace,
        "run_id": "test",
        "round": 1,
        "pass_number": 1,
        "pass_id": pass_.pass_id,
        "seed": pass_.seed,
        "change": pass_.change,
        "proposals": [p.to_wire() for p in PROPOSALS],
        "candidates": 3,
    }
    controller = subprocess.Popen([sys.executable, "-c", CONTROLLER, json.dumps(fields)])
    try:

        def running() -> set[str]:
            return {p.name.split("-")[0] for p in marks.iterdir() if p.name != "release"}

        wait_until(lambda: len(running()) == 3, 60, "all three candidates in flight")
        os.kill(controller.pid, signal.SIGKILL)
        controller.wait(30)
    finally:
        controller.kill()
        (marks / "release").touch()  # the killed controller's experiments end too
    stopped = records(tmp_path).read_round(1)
    assert stopped is not None
    approaches = in_flight(stopped.passes, "test")
    assert sorted(approaches) == ["challenge:worse", "exploration:low", "exploration:manual"]
    assert in_flight_text(approaches).startswith(" · measuring 3 candidates: ")
    evidence = measure(pass_)
    record = records(tmp_path).read_round(1)
    assert record is not None and len(record.passes) == 3, "nothing lost, nothing added"
    assert all(p.evidence is not None for p in record.passes)
    assert all(p.notes[0].startswith("carried on after its earlier") for p in record.passes)
    assert record.passes[-1].evidence == evidence and not in_flight(record.passes, "test")
    ids = [p.evidence.candidate_id for p in record.passes if p.evidence]
    assert len(set(ids)) == 3 and set(records(tmp_path).candidates()) == {BASELINE_ID, *ids}
    assert_each_seed_once(tmp_path)
    assert len(records(tmp_path).candidates()[BASELINE_ID].measurements) == baseline_runs


PARALLEL_RUN = ("--iterations", "2", "--parallel", "3")


@pytest.mark.slow  # real research runs
def test_research_run_with_parallel_candidates_through_the_engine(tmp_path: Path) -> None:
    """Real rounds (scouts, researcher, trusted measure, reviewer, trusted adoption) with
    three candidates a pass, as a user types it."""
    (tmp_path / ".zeroshot").mkdir()
    line_task(tmp_path / "t")
    ran = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "research", "run", "t", *PARALLEL_RUN],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)},
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    study = ResearchRecords(tmp_path, "t")
    state = study.snapshot()
    decided = [state.rounds[n] for n in sorted(state.rounds) if n > 0]
    assert len(decided) == 2 and all(r.result is not None for r in decided)
    rows = [p for r in decided for p in r.passes]
    assert len(rows) > 2, "some pass measured more than one candidate"
    assert all(p.status == "done" and p.evidence is not None for p in rows)
    candidates = study.candidates()
    assert {p.evidence.candidate_id for p in rows if p.evidence} <= set(candidates)
    hashes = [m.content_sha256 for m in candidates.values()]
    assert len(hashes) == len(set(hashes)), "one id per candidate's bytes"
    for r in decided:
        assert r.result is not None and r.passes[-1].evidence is not None
        assert r.result.candidate_id == r.passes[-1].evidence.candidate_id
    for candidate_id, manifest in study.candidates().items():
        seeds = [m.experiment.seed for m in manifest.measurements]
        assert len(seeds) == len(set(seeds)), f"{candidate_id} measured a seed twice"


HELD_BEYOND_BASELINE = HELD.replace("while not", "while x != 1.0 and not")
"""The baseline (x = 1.0) runs at once; every other candidate waits for the release."""


@pytest.mark.slow  # real research runs
def test_the_study_browser_and_the_report_say_which_candidates_are_in_flight(
    tmp_path: Path,
) -> None:
    """While a ``--parallel 3`` run measures its candidates, its row in the study browser
    and its report say how many and which; once it ended, nothing is in flight.
    Uncontained, so that the test sees each experiment start."""
    from zeroshot_widgets.report import report_html

    from zeroshot_kernel import Client
    from zeroshot_kernel.auto_research.studies.table import RunRow, study_rows

    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / ".zeroshot").mkdir()
    task = line_task(tmp_path / "t", budget=60.0, env={"MARKS": str(marks)})
    (task / "candidate" / "objective.py").write_text(HELD_BEYOND_BASELINE)
    argv = ["research", "run", "t", "--iterations", "1", "--parallel", "3", "--sandbox", "none"]
    run = subprocess.Popen(
        [sys.executable, "-m", "zeroshot_kernel", *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)},
    )
    try:

        def held() -> set[str]:
            return {p.name.split("-")[0] for p in marks.iterdir()} - {"1.0", "release"}

        def row() -> RunRow | None:
            rows = [r for s in study_rows(Client(workspace=str(tmp_path))) for r in s.runs]
            return rows[0] if rows else None

        def several_in_flight() -> bool:
            now = row()
            return now is not None and len(now.in_flight) >= 2 and len(held()) >= 2

        wait_until(several_in_flight, 120, "candidates measured at once")
        in_flight = row()
        assert in_flight is not None
        label = in_flight.status_label
        assert label.startswith(f"running · measuring {len(in_flight.in_flight)} candidates: ")
        assert all(approach in label for approach in in_flight.in_flight)
        page = report_html(Client(workspace=str(tmp_path)), in_flight.run_id)
        assert "Round 1 in progress · measuring " in page
        assert all(html.escape(approach) in page for approach in in_flight.in_flight)
    finally:
        (marks / "release").touch()
        output, _ = run.communicate(timeout=300)
    assert run.returncode == 0, output
    ended = row()
    assert ended is not None and ended.in_flight == () and "measuring" not in ended.status_label
    assert "in progress" not in report_html(Client(workspace=str(tmp_path)), ended.run_id)
