"""A study belongs to one task: a run whose task now has another name, or measures another
metric or direction, is refused before anything is created, however the task folder is
named; the same task from another folder continues it, and a study recorded before the
task's name and metric were kept continues and records them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from research_driver import line_task
from support import zeroshot

from zeroshot_kernel.auto_research import ResearchRecords, StudyError, load_task
from zeroshot_kernel.auto_research.studies.catalog import claim_study, records_for
from zeroshot_kernel.client import Client

STUDY = "line"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose study ``line`` was started by a run of the task ``line``."""
    (tmp_path / ".zeroshot").mkdir()
    task = line_task(tmp_path / "line")
    records_for(tmp_path, STUDY).round_offset("run-first", "line", load_task(task).spec)
    return tmp_path


def edit_task(task: Path, **fields: str) -> None:
    spec = yaml.safe_load((task / "task.yaml").read_text())
    (task / "task.yaml").write_text(yaml.safe_dump({**spec, **fields}))


def claim(workspace: Path, task: str) -> None:
    claim_study(Client(workspace=str(workspace)), workspace, STUDY, task)


def test_the_first_run_records_the_task_it_researches(workspace: Path) -> None:
    study = ResearchRecords(workspace, STUDY).read_study()
    assert study is not None
    assert (study.task, study.task_name, study.metric, study.direction) == (
        "line",
        "line",
        "line",
        "minimize",
    )


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"metric": "score"}, "measures line (minimize), and 'line' now measures score (minimize)"),
        ({"direction": "maximize"}, "now measures line (maximize)"),
        ({"name": "other"}, "researches task 'line', and 'line' is now 'other'"),
    ],
)
def test_a_task_that_changed_what_it_is_cannot_continue_the_study(
    workspace: Path, fields: dict[str, str], said: str
) -> None:
    edit_task(workspace / "line", **fields)
    with pytest.raises(StudyError, match="name another study with --study") as refused:
        claim(workspace, "line")
    assert said in str(refused.value)


def test_another_task_in_a_folder_of_the_same_name_is_refused_on_the_command_line(
    workspace: Path,
) -> None:
    copy = workspace / "elsewhere" / "line"
    shutil.copytree(workspace / "line", copy)
    edit_task(copy, name="notline", metric="score", direction="maximize")
    study = ResearchRecords(workspace, STUDY).study_path
    before = study.read_bytes()
    refused = zeroshot(workspace, "research", "run", "elsewhere/line", "--study", STUDY)
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert "study 'line' researches task 'line', and 'elsewhere/line' is now 'notline'" in line
    assert "Traceback" not in refused.stderr
    assert study.read_bytes() == before
    assert Client(workspace=str(workspace)).runs() == []


def test_the_same_task_from_another_folder_continues_the_study(workspace: Path) -> None:
    shutil.copytree(workspace / "line", workspace / "moved" / "line")
    claim(workspace, "moved/line")  # nothing raised: the study is free for it
    edit_task(workspace / "line", budgetSeconds="3")  # how it runs is not what it is
    claim(workspace, "line")


def test_a_study_recorded_before_identities_continues_and_then_records_one(
    workspace: Path,
) -> None:
    records = ResearchRecords(workspace, STUDY)
    records.study_path.write_text(json.dumps({"task": "line", "runOffsets": {"run-old": 0}}))
    edit_task(workspace / "line", metric="score")  # nothing recorded to compare it with
    claim(workspace, "line")
    records.round_offset("run-next", "line", load_task(workspace / "line").spec)
    study = records.read_study()
    assert study is not None and (study.task_name, study.metric) == ("line", "score")
    assert study.run_offsets == {"run-old": 0, "run-next": 0}
    edit_task(workspace / "line", metric="line")
    with pytest.raises(StudyError, match="measures score"):
        claim(workspace, "line")
