"""Studies through the real command line on the embedded agents: two tasks in one
workspace never touch each other's records, a second run of a study continues from its
incumbent with new candidate ids, a busy study refuses a second run before anything
starts, records from before studies are kept, and a candidate restores only when its bytes
match their hash."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zeroshot_kernel.client import Client
from zeroshot_kernel.research import RestoreError, restore_candidate_source
from zeroshot_kernel.research.records import RECORDS_DIR

TEMPLATES = Path(__file__).resolve().parent.parent / "research_templates"


def zeroshot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zeroshot_kernel", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)})


def research(workspace: Path, task: str, *extra: str) -> str:
    ran = zeroshot(workspace, "research", "run", task, "--iterations", "2", *extra)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout.split(":", 1)[0].removeprefix("started ")


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def shown(workspace: Path, run_id: str) -> dict[str, object]:
    ran = zeroshot(workspace, "research", "show", run_id, "--json")
    assert ran.returncode == 0, ran.stderr
    return dict(json.loads(ran.stdout))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / ".zeroshot").mkdir()
    return tmp_path


@pytest.mark.parametrize("order", [("branin", "rosenbrock"), ("rosenbrock", "branin")])
def test_two_tasks_each_run_twice_never_touch_each_other(
    workspace: Path, order: tuple[str, str]
) -> None:
    first, second = order
    studies = workspace / RECORDS_DIR
    runs = {first: [research(workspace, first)]}
    kept = fingerprint(studies / first)
    runs[second] = [research(workspace, second)]
    assert fingerprint(studies / first) == kept
    kept_second = fingerprint(studies / second)
    runs[first].append(research(workspace, first))
    assert fingerprint(studies / second) == kept_second
    runs[second].append(research(workspace, second))

    for task, (earlier, later) in runs.items():
        before, after = shown(workspace, earlier), shown(workspace, later)
        assert before["terminal"]["status"] == after["terminal"]["status"] == "succeeded"  # type: ignore[index]
        earlier_ids = {r["candidateId"] for r in before["rounds"]}  # type: ignore[attr-defined]
        later_rounds = after["rounds"]
        assert isinstance(later_rounds, list)
        assert not earlier_ids & {r["candidateId"] for r in later_rounds}
        assert [r["round"] for r in later_rounds] == [3, 4]
        # The later run starts from the incumbent the earlier one left.
        assert later_rounds[0]["incumbentId"] == before["incumbent"]["candidateId"]  # type: ignore[index]
        manifests = sorted(p.parent.name for p in (studies / task / "candidates").glob(
            "*/manifest.json"))
        assert manifests.count("c000") == 1

    listed = json.loads(zeroshot(workspace, "research", "studies", "--json").stdout)
    assert [(s["name"], s["runs"], s["rounds"]) for s in listed] == sorted(
        [(first, 2, 5), (second, 2, 5)])


GATED_OBJECTIVE = """import pathlib, runpy, time
deadline = time.monotonic() + 120
while not pathlib.Path({gate!r}).exists() and time.monotonic() < deadline:
    time.sleep(0.05)
runpy.run_path("objective_original.py", run_name="__main__")
"""


def gated_task(workspace: Path) -> Path:
    """``gated``: branin whose experiment waits until the returned gate file exists, so
    its run stays unfinished for as long as a test needs."""
    task = workspace / "gated"
    shutil.copytree(TEMPLATES / "branin", task)
    candidate = task / "candidate"
    (candidate / "objective.py").rename(candidate / "objective_original.py")
    gate = workspace / "gate"
    (candidate / "objective.py").write_text(GATED_OBJECTIVE.format(gate=str(gate)))
    spec = task / "task.yaml"
    spec.write_text(spec.read_text().replace("budgetSeconds: 10", "budgetSeconds: 150"))
    return gate


def test_a_busy_study_refuses_a_second_run_before_anything_starts(workspace: Path) -> None:
    gate = gated_task(workspace)
    started = zeroshot(workspace, "research", "run", "gated", "--iterations", "1", "--detach")
    assert started.returncode == 0, started.stderr
    busy = zeroshot(workspace, "research", "run", "gated", "--iterations", "1")
    assert busy.returncode == 2
    [line] = busy.stderr.splitlines()
    assert "study 'gated' already has an unfinished run" in line and "Nothing was started" in line
    assert len(Client(workspace=str(workspace)).runs()) == 1

    gate.touch()
    # Another study of the same task is free.
    research(workspace, "gated", "--study", "gated-b")
    assert (workspace / RECORDS_DIR / "gated-b" / "incumbent.json").is_file()
    wrong = zeroshot(workspace, "research", "run", "rosenbrock", "--study", "gated-b")
    assert wrong.returncode == 2 and "researches task" in wrong.stderr
    bad = zeroshot(workspace, "research", "run", "gated", "--study", "../escape")
    assert bad.returncode == 2 and "study name" in bad.stderr


def test_records_from_before_studies_are_kept_in_a_study_of_their_own(workspace: Path) -> None:
    research(workspace, "branin")
    # Lay the records out as they were before studies: directly under .zeroshot/research/.
    root = workspace / RECORDS_DIR
    for entry in (root / "branin").iterdir():
        entry.rename(root / entry.name)
    (root / "branin").rmdir()
    (root / "study.json").unlink()
    before = fingerprint(root)

    listed = json.loads(zeroshot(workspace, "research", "studies", "--json").stdout)
    assert [s["name"] for s in listed] == ["legacy"]
    assert fingerprint(root / "legacy") == before
    assert listed[0]["incumbentId"] is not None


def test_restore_writes_verified_source_and_refuses_tampered_bytes(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run_id = research(workspace, "rosenbrock")
    incumbent = shown(workspace, run_id)["incumbent"]["candidateId"]  # type: ignore[index]
    stored = workspace / RECORDS_DIR / "rosenbrock" / "candidates" / incumbent / "source"

    by_run = tmp_path_factory.mktemp("by-run")
    restored = zeroshot(workspace, "research", "restore", run_id, incumbent, str(by_run))
    assert restored.returncode == 0, restored.stderr
    assert fingerprint(by_run) == fingerprint(stored)

    again = zeroshot(workspace, "research", "restore", "rosenbrock", incumbent, str(by_run))
    assert again.returncode == 2 and "not empty" in again.stderr
    unknown = zeroshot(workspace, "research", "restore", "rosenbrock", "../c000", str(by_run))
    assert unknown.returncode == 2 and "no candidate" in unknown.stderr

    params = stored / "params.json"
    params.write_text(params.read_text() + " ")
    fresh = tmp_path_factory.mktemp("fresh")
    with pytest.raises(RestoreError, match="does not match its content hash"):
        restore_candidate_source(workspace, "rosenbrock", incumbent, fresh)
    assert list(fresh.iterdir()) == []
    shutil.rmtree(fresh)


def test_two_runs_started_at_once_on_one_study_start_one(workspace: Path) -> None:
    """The check and the submission happen under one lock: racing submitters cannot both
    find the study free."""
    gate = gated_task(workspace)
    command = [sys.executable, "-m", "zeroshot_kernel", "research", "run", "gated",
               "--iterations", "1", "--detach"]
    racers = [subprocess.Popen(command, cwd=workspace, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        codes = sorted(racer.wait(timeout=120) for racer in racers)
        assert codes == [0, 2]
        assert len(Client(workspace=str(workspace)).runs()) == 1
    finally:
        gate.touch()
        for racer in racers:
            racer.communicate()
