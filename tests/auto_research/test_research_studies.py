"""Studies through the real command line on the embedded agents: two tasks in one
workspace never touch each other's records, a second run of a study continues from its
incumbent with new candidate ids, a busy study refuses a second run before anything
starts, records from before studies are kept, and a candidate restores only when its bytes
match their hash."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from auto_research_support import box_visible_folder
from support import wait_until, zeroshot
from zeroshot_widgets.charts import plateau_figure

from zeroshot_kernel.auto_research import RestoreError, StudyError, restore_candidate_source
from zeroshot_kernel.auto_research.lock_files import LOCKS_DIR
from zeroshot_kernel.auto_research.records import RECORDS_DIR, CandidateManifest
from zeroshot_kernel.auto_research.studies.run_lock import study_holder
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.client import Client
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: real research runs from zeroshot processes
pytestmark = pytest.mark.slow

TEMPLATES = Path(__file__).resolve().parents[2] / "research_templates"


def research(workspace: Path, task: str, *extra: str) -> str:
    ran = zeroshot(workspace, "research", "run", task, "--iterations", "2", *extra)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout.split(":", 1)[0].removeprefix("started ")


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def recorded(folder: Path) -> dict[str, bytes]:
    """What a study's runs recorded: its rounds and candidates (not the current summary
    files and incumbent, which a later run rewrites by design)."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for part in ("rounds", "candidates")
        for path in sorted((folder / part).rglob("*"))
        if path.is_file()
    }


def assert_kept(earlier: dict[str, bytes], folder: Path) -> None:
    """Every file recorded before is still there with the same bytes; a manifest may only
    have gained measurements after the ones it had."""
    for path, content in earlier.items():
        now = (folder / path).read_bytes()
        if path.endswith("manifest.json") and now != content:
            old = CandidateManifest.from_wire(json.loads(content))
            new = CandidateManifest.from_wire(json.loads(now))
            assert new.measurements[: len(old.measurements)] == old.measurements, path
            assert new.model_copy(update={"measurements": old.measurements}) == old, path
        else:
            assert now == content, path


def shown(workspace: Path, run_id: str) -> dict[str, object]:
    ran = zeroshot(workspace, "research", "show", run_id, "--json")
    assert ran.returncode == 0, ran.stderr
    return dict(json.loads(ran.stdout))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / ".zeroshot").mkdir()
    return tmp_path


def test_two_tasks_each_run_twice_never_touch_each_other(workspace: Path) -> None:
    first, second = "branin", "rosenbrock"  # interleaved: first, second, first, second
    studies = workspace / RECORDS_DIR
    runs = {first: [research(workspace, first)]}
    kept = fingerprint(studies / first)
    earlier = {first: recorded(studies / first)}
    runs[second] = [research(workspace, second)]
    assert fingerprint(studies / first) == kept
    kept_second = fingerprint(studies / second)
    earlier[second] = recorded(studies / second)
    runs[first].append(research(workspace, first))
    assert fingerprint(studies / second) == kept_second
    kept = fingerprint(studies / first)
    runs[second].append(research(workspace, second))
    assert fingerprint(studies / first) == kept
    for task, records in earlier.items():
        assert_kept(records, studies / task)

    for task, (earlier, later) in runs.items():
        before, after = shown(workspace, earlier), shown(workspace, later)
        assert before["terminal"]["status"] == after["terminal"]["status"] == "succeeded"  # type: ignore[index]
        earlier_ids = {r["candidateId"] for r in before["rounds"]}  # type: ignore[attr-defined]
        later_rounds = after["rounds"]
        assert isinstance(later_rounds, list)
        for later_round in later_rounds:
            # new candidates get new ids; an earlier id comes back only when the later run
            # proposed the very same bytes (measured as that stored candidate)
            manifest = CandidateManifest.from_wire(
                json.loads(
                    (studies / task / "candidates" / later_round["candidateId"])
                    .joinpath("manifest.json")
                    .read_text()
                )
            )
            if manifest.round >= 3:  # recorded by the later run: a fresh id
                assert later_round["candidateId"] not in earlier_ids
        assert [r["round"] for r in later_rounds] == [3, 4]
        # The later run starts from the incumbent the earlier one left.
        assert later_rounds[0]["incumbentId"] == before["incumbent"]["candidateId"]  # type: ignore[index]
        manifests = sorted(
            p.parent.name for p in (studies / task / "candidates").glob("*/manifest.json")
        )
        assert manifests.count("c000") == 1
        # The chart of the later run starts where the study was, not at round 0.
        view = load_research_view(Client(workspace=str(workspace)).ledger, later)
        (best,) = [
            line for line in plateau_figure(view).axes[0].lines if line.get_label() == "best so far"
        ]
        assert list(best.get_xdata()) == [2, 3, 4]

    listed = json.loads(zeroshot(workspace, "research", "studies", "--json").stdout)
    assert [(s["name"], s["runs"], s["rounds"]) for s in listed] == sorted(
        [(first, 2, 4), (second, 2, 4)]  # reviewed rounds, as the browser counts them
    )


GATED_OBJECTIVE = """import pathlib, runpy, time
deadline = time.monotonic() + 120
while not pathlib.Path({gate!r}).exists() and time.monotonic() < deadline:
    time.sleep(0.05)
runpy.run_path("objective_original.py", run_name="__main__")
"""


@pytest.fixture
def gates() -> Iterator[Path]:
    """Where gates go: a folder the boxed experiments can see."""
    with box_visible_folder() as folder:
        yield folder


def gated_task(workspace: Path, gates: Path) -> Path:
    """``gated``: branin whose experiment waits until the returned gate file (in
    ``gates``) exists, so its run stays unfinished for as long as a test needs."""
    task = workspace / "gated"
    shutil.copytree(TEMPLATES / "branin", task)
    candidate = task / "candidate"
    (candidate / "objective.py").rename(candidate / "objective_original.py")
    gate = gates / "gate"
    (candidate / "objective.py").write_text(GATED_OBJECTIVE.format(gate=str(gate)))
    spec = task / "task.yaml"
    spec.write_text(spec.read_text().replace("budgetSeconds: 10", "budgetSeconds: 150"))
    return gate


def test_a_busy_study_refuses_a_second_run_before_anything_starts(
    workspace: Path, gates: Path
) -> None:
    gate = gated_task(workspace, gates)
    started = zeroshot(workspace, "research", "run", "gated", "--iterations", "1", "--detach")
    assert started.returncode == 0, started.stderr
    busy = zeroshot(workspace, "research", "run", "gated", "--iterations", "1")
    assert busy.returncode == 2
    [line] = busy.stderr.splitlines()
    assert "study 'gated' already has an unfinished run" in line and "Nothing was started" in line
    # The Python API (what notebooks and profiles submit through) is refused the same way.
    client = Client(workspace=str(workspace))
    expansion = expand_template("auto-research", TemplateOptions(task="gated", iterations=1))
    with pytest.raises(StudyError, match="already has an unfinished run"):
        client.submit(expansion.graph, input=expansion.input, runtime=expansion.runtime)
    assert len(client.runs()) == 1

    gate.touch()
    # Another study of the same task is free.
    research(workspace, "gated", "--study", "gated-b")
    assert (workspace / RECORDS_DIR / "gated-b" / "incumbent.json").is_file()
    wrong = zeroshot(workspace, "research", "run", "rosenbrock", "--study", "gated-b")
    assert wrong.returncode == 2 and "researches task" in wrong.stderr
    for bad_name in ("../escape", "rounds", "x" * 65):
        bad = zeroshot(workspace, "research", "run", "gated", "--study", bad_name)
        assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr
        assert "study name" in bad.stderr
    assert len(client.runs()) == 2


BEFORE_STUDIES = Path(__file__).resolve().parents[1] / "research_before_studies"
"""Records exactly as the code before studies wrote them (commit 3b2d675, ``zeroshot
research run branin --iterations 3``): directly under ``.zeroshot/research/``."""


def test_records_from_before_studies_are_kept_and_can_be_continued(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = workspace / RECORDS_DIR
    shutil.copytree(BEFORE_STUDIES, root)
    before = fingerprint(root)
    # Two readers at once move them once, into one study.
    readers = [
        subprocess.Popen(
            [sys.executable, "-m", "zeroshot_kernel", "research", "studies", "--json"],
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [reader.communicate(timeout=120) for reader in readers]
    assert [reader.returncode for reader in readers] == [0, 0], outputs
    assert sorted(p.name for p in root.iterdir()) == ["legacy"]
    assert fingerprint(root / "legacy") == before
    [listed] = json.loads(outputs[0][0])
    assert (listed["name"], listed["task"], listed["rounds"], listed["incumbentId"]) == (
        "legacy",
        None,
        3,  # reviewed rounds (round 0 is the baseline)
        "c002",
    )

    restored = tmp_path_factory.mktemp("restored")
    assert (
        zeroshot(workspace, "research", "restore", "legacy", "c002", str(restored)).returncode == 0
    )
    assert fingerprint(restored) == fingerprint(root / "legacy" / "candidates" / "c002" / "source")

    # The task's own study starts afresh; the legacy study continues only when named.
    fresh = shown(workspace, research(workspace, "branin"))
    assert [r["round"] for r in fresh["rounds"]] == [1, 2]  # type: ignore[index]
    assert fingerprint(root / "legacy") == before
    continued = shown(workspace, research(workspace, "branin", "--study", "legacy"))
    rounds = continued["rounds"]
    assert isinstance(rounds, list)
    assert [r["round"] for r in rounds] == [4, 5]
    assert rounds[0]["incumbentId"] == "c002"
    assert {r["candidateId"] for r in rounds}.isdisjoint({"c000", "c001", "c002", "c003"})
    assert_kept(recorded(BEFORE_STUDIES), root / "legacy")


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
    # --force replaces a symlink in the way; it never writes through it.
    outside = tmp_path_factory.mktemp("outside") / "kept.json"
    outside.write_text("{}")
    (by_run / "params.json").unlink()
    (by_run / "params.json").symlink_to(outside)
    forced = zeroshot(
        workspace, "research", "restore", "rosenbrock", incumbent, str(by_run), "--force"
    )
    assert forced.returncode == 0, forced.stderr
    assert outside.read_text() == "{}" and not (by_run / "params.json").is_symlink()
    assert fingerprint(by_run) == fingerprint(stored)
    for unusable in (outside, outside / "below-a-file"):
        refused = zeroshot(workspace, "research", "restore", "rosenbrock", incumbent, str(unusable))
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "internal error" not in refused.stderr

    params = stored / "params.json"
    params.write_text(params.read_text() + " ")
    fresh = tmp_path_factory.mktemp("fresh")
    with pytest.raises(RestoreError, match="does not match its content hash"):
        restore_candidate_source(workspace, "rosenbrock", incumbent, fresh)
    assert list(fresh.iterdir()) == []
    shutil.rmtree(fresh)


def test_two_runs_started_at_once_on_one_study_start_one(workspace: Path, gates: Path) -> None:
    """The check and the submission happen under one lock: racing submitters cannot both
    find the study free."""
    gate = gated_task(workspace, gates)
    command = [
        sys.executable,
        "-m",
        "zeroshot_kernel",
        "research",
        "run",
        "gated",
        "--iterations",
        "1",
        "--detach",
    ]
    racers = [
        subprocess.Popen(
            command, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        codes = sorted(racer.wait(timeout=120) for racer in racers)
        assert codes == [0, 2]
        assert len(Client(workspace=str(workspace)).runs()) == 1
    finally:
        gate.touch()
        for racer in racers:
            racer.communicate()


def test_damaged_study_records_are_reported_not_raised(workspace: Path) -> None:
    broken = workspace / RECORDS_DIR / "broken"
    broken.mkdir(parents=True)
    (broken / "study.json").write_text("{not json")
    listed = zeroshot(workspace, "research", "studies", "--json")
    assert listed.returncode == 0, listed.stderr
    [study] = json.loads(listed.stdout)
    assert study["name"] == "broken" and "unreadable records" in study["problem"]
    refused = zeroshot(workspace, "research", "run", "branin", "--study", "broken")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "damaged study.json" in refused.stderr
    assert Client(workspace=str(workspace)).runs() == []


def test_a_study_is_held_by_one_run_whatever_ledger_records_it(
    workspace: Path, gates: Path
) -> None:
    """Two ledgers in one workspace: the live controller's hold on the study refuses the
    other ledger's submission; a submission that got past that check (here: the holder
    file is gone) fails at its first research step, before it records anything."""
    gate = gated_task(workspace, gates)
    first = zeroshot(
        workspace, "research", "run", "gated", "--iterations", "1", "--detach",
        "--ledger", str(workspace / "a.db"),
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    run_a = first.stdout.split(":", 1)[0].removeprefix("started ")
    wait_until(lambda: study_holder(workspace, "gated") == run_a, 120, "the study's hold")
    holder_file = workspace / LOCKS_DIR / "study-gated.holder.json"
    try:
        other = zeroshot(workspace, "research", "run", "gated", "--ledger", str(workspace / "b.db"))
        assert other.returncode == 2
        [line] = other.stderr.splitlines()
        assert f"study 'gated' is being researched by run {run_a}" in line, line
        assert "Nothing was started" in line
        assert not Client(workspace=str(workspace), ledger=str(workspace / "b.db")).runs()

        holder_file.unlink()  # the advisory file gone: only the lock stands in the way
        raced = zeroshot(
            workspace,
            "research",
            "run",
            "gated",
            "--iterations",
            "1",
            "--ledger",
            str(workspace / "b.db"),
        )
        assert raced.returncode != 0
        ledger_b = Client(workspace=str(workspace), ledger=str(workspace / "b.db"))
        (run_b,) = ledger_b.runs()
        assert run_b.terminal is not None and run_b.terminal.status == "failed"
        status = json.loads(zeroshot(workspace, "status", run_b.run_id, "--json",
                                     "--ledger", str(workspace / "b.db")).stdout)  # fmt: skip
        assert "study 'gated' is being researched by another run" in json.dumps(status)
        study = json.loads((workspace / RECORDS_DIR / "gated" / "study.json").read_text())
        assert run_b.run_id not in json.dumps(study)  # it recorded nothing in the study
    finally:
        gate.touch()
    ledger_a = Client(workspace=str(workspace), ledger=str(workspace / "a.db"))
    assert ledger_a.run(run_a).result(timeout=300).status == "succeeded"
    # the controller ended: the study is free for either ledger
    wait_until(lambda: study_holder(workspace, "gated") is None, 60, "the hold to go")
    research(workspace, "gated", "--ledger", str(workspace / "b.db"))
