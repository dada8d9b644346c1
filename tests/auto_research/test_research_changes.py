"""Changes with file edits through the trusted measure step: legal edits (whole contents, a
one-file unified diff) are built, stored with content hashes and measured; every illegal
change is a recorded ``change_rejected`` result with its reasons, never an exception, and
writes nothing outside the scratch copy."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from research_driver import LINE_OBJECTIVE, STUDY, change, decide, line_task, measure_pass

from zeroshot_kernel.auto_research import (
    ResearchRecords,
    content_sha256,
    restore_candidate,
    tree_hashes,
)


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Path, Path]:
    """The line task with its ``*.py`` files editable (its objective too, so it declares
    itself self-scored), and a workspace."""
    task = line_task(tmp_path / "task")
    spec = json.loads((task / "task.yaml").read_text())
    (task / "task.yaml").write_text(json.dumps({**spec, "editable": ["*.py"], "selfScored": True}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return task, workspace


def edit(path: str, kind: str, text: str = "") -> dict[str, str]:
    return {"path": path, "kind": kind, "text": text}


def diff_of(before: str, after: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"
        )
    )


SHIFTED = LINE_OBJECTIVE.replace('"value": x + noise', '"value": x - 0.5 + noise')


@pytest.mark.parametrize("kind", ["contents", "diff"])
def test_a_legal_edit_is_built_stored_and_measured(
    lab: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    task, workspace = lab
    text = SHIFTED if kind == "contents" else diff_of(LINE_OBJECTIVE, SHIFTED, "objective.py")
    proposed = change(
        {}, edits=[edit("objective.py", kind, text), edit("notes.py", "contents", "# why\n")]
    )
    evidence = measure_pass(task, workspace, 1, proposed)
    assert evidence.status == "measured" and evidence.candidate_id == "c001"
    # The objective now reports x - 0.5 on the same seeds: a paired gain of exactly 0.5.
    assert evidence.gain == pytest.approx(0.5) and evidence.supports_adoption
    assert (
        '+print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": x - 0.5 + noise}))'
        in evidence.diff
        and "+++ b/notes.py" in evidence.diff
    )
    assert evidence.effect_size is None  # the seeded noise cancels: the gain is exact

    records = ResearchRecords(workspace, STUDY)
    manifest = records.read_manifest("c001")
    assert manifest is not None and manifest.parent_id == "c000"
    restored = tmp_path / "restored"
    assert restore_candidate(records, "c001", restored).ok
    assert (restored / "objective.py").read_text() == SHIFTED
    assert (restored / "notes.py").read_text() == "# why\n"
    assert (
        content_sha256(tree_hashes(restored))
        == manifest.content_sha256
        == evidence.candidate_sha256
    )
    assert decide(task, workspace, evidence).disposition == "adopt"


def test_deleting_a_file_and_a_change_that_leaves_the_bytes_measures_the_parent(
    lab: tuple[Path, Path],
) -> None:
    task, workspace = lab
    added = measure_pass(
        task, workspace, 1, change({}, edits=[edit("extra.py", "contents", "pass\n")])
    )
    assert added.candidate_id == "c001"
    decide(task, workspace, added, "accepted", adopt_it=False)
    removed = measure_pass(
        task, workspace, 2, change({}, parent="c001", edits=[edit("extra.py", "delete")])
    )
    # Deleting the added file gives back the starting bytes: that candidate is measured.
    assert removed.status == "measured" and removed.candidate_id == "c000"
    assert "leaves the bytes of c000" in removed.summary


REJECTED: list[tuple[Any, str]] = [
    (change({"x": 5.0}), "bad parameters: x=5.0 is outside [0, 2]"),
    (change({"z": 1.0}), "unknown parameters: z (the search space has x)"),
    (
        {
            "parentId": "c000",
            "strategy": "exploration",
            "approach": "a",
            "rationale": "r",
            "paramsJson": "refuse",
        },
        "the change is malformed: paramsJson",
    ),
    (
        {
            "parentId": "c000",
            "strategy": "exploration",
            "approach": "a",
            "rationale": "r",
            "metric": 0.0,
        },
        "the change is malformed: metric: Extra inputs are not permitted",
    ),
    (change({}, parent="c999"), "the study has no candidate 'c999' to change"),
    (change({}, parent="../c000"), "the study has no candidate '../c000' to change"),
    (
        change({}, edits=[edit("task.txt", "contents", "x")]),
        "'task.txt' is outside the task's editable files (*.py)",
    ),
    (
        change({}, edits=[edit("../escape.py", "contents", "x")]),
        "'../escape.py' leaves candidate/ ('..')",
    ),
    (change({}, edits=[edit("/tmp/escape.py", "contents", "x")]), "'/tmp/escape.py' is absolute"),
    (change({}, edits=[edit("a//b.py", "contents", "x")]), "'a//b.py' is not a normalised path"),
    (
        change({}, edits=[edit("objective.py/inner.py", "contents", "x")]),
        "'objective.py/inner.py' goes through 'objective.py', which is not a folder",
    ),
    (
        change(
            {},
            edits=[
                edit(
                    "link.py",
                    "diff",
                    "diff --git a/link.py b/link.py\nnew file mode "
                    "120000\n--- /dev/null\n+++ b/link.py\n@@ -0,0 +1 @@\n"
                    "+/etc/passwd\n",
                )
            ],
        ),
        "the diff makes a symbolic link",
    ),
    (
        change(
            {},
            edits=[
                edit("objective.py", "diff", diff_of("nothing\nlike\n", "it\n", "objective.py"))
            ],
        ),
        "the diff of 'objective.py' does not apply: hunk 1 does not match the file at line 1",
    ),
    (
        change(
            {}, edits=[edit("objective.py", "diff", diff_of(LINE_OBJECTIVE, SHIFTED, "other.py"))]
        ),
        "the diff names 'a/other.py', not 'objective.py'",
    ),
    (
        change({}, edits=[edit("gone.py", "delete")]),
        "'gone.py' cannot be deleted: the parent has no such file",
    ),
    (
        change({}, edits=[edit("big.py", "contents", "#" * (1 << 20 + 1))]),
        "'big.py' would hold 2097152 bytes",
    ),
    (
        change({"x": 0.5}, edits=[edit("params.py", "contents", "")] * 2),
        "'params.py' is edited more than once",
    ),
]


@pytest.mark.parametrize(
    ("proposed", "reason"), REJECTED, ids=[reason[:40] for _, reason in REJECTED]
)
def test_an_illegal_change_is_a_recorded_result_with_its_reason(
    lab: tuple[Path, Path],
    proposed: Any,
    reason: str,
) -> None:
    task, workspace = lab
    evidence = measure_pass(task, workspace, 1, proposed)
    assert evidence.status == "change_rejected", evidence
    assert any(reason in r for r in evidence.reasons), evidence.reasons
    assert evidence.candidate_id == "" and evidence.experiment_status == "not_run"
    assert not evidence.supports_adoption and evidence.metric_repeats == []

    records = ResearchRecords(workspace, STUDY)
    assert sorted(records.candidates()) == ["c000"]  # nothing stored, only the baseline
    record = records.read_round(1)
    assert record is not None and record.passes[-1].evidence == evidence
    assert not (workspace / "escape.py").exists() and not (task / "escape.py").exists()
    result = decide(task, workspace, evidence, "accepted", adopt_it=True)
    assert result.disposition == "reject" and reason.split(":")[0] in result.justification
    incumbent = records.read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c000"


def test_a_task_without_editable_files_takes_parameters_only(tmp_path: Path) -> None:
    task = line_task(tmp_path / "task")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    evidence = measure_pass(
        task, workspace, 1, change({}, edits=[edit("objective.py", "contents", SHIFTED)])
    )
    assert evidence.status == "change_rejected"
    assert "the task declares no editable files" in evidence.reasons[0]
