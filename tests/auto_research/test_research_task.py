"""Research task folders: the bundled tasks load, bad folders fail with a clear reason."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from research_driver import BUNDLED, TEMPLATES, line_task

from zeroshot_kernel.auto_research import TaskError, load_task, parse_metric
from zeroshot_kernel.auto_research.payloads import payload_types
from zeroshot_kernel.auto_research.protocol import ReviewVerdict, ScoutInput, ScoutProposal
from zeroshot_kernel.contract.payload import check_value
from zeroshot_kernel.contract.reading import MAX_DOCUMENT_BYTES


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_task_loads(name: str) -> None:
    task = load_task(TEMPLATES / name)
    assert task.spec.name == name
    assert task.spec.repeats >= 2 and task.spec.budget_seconds > 0
    assert set(task.start_params) == {p.name for p in task.spec.search_space}
    assert (task.candidate_dir / task.spec.params_file).is_file()


def _task_copy(tmp_path: Path) -> Path:
    root = tmp_path / "task"
    shutil.copytree(TEMPLATES / "rosenbrock", root)
    return root


def _edit_yaml(root: Path, **changes: object) -> None:
    import yaml

    document = yaml.safe_load((root / "task.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            document.pop(key)
        else:
            document[key] = value
    (root / "task.yaml").write_text(yaml.safe_dump(document))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"direction": "sideways"}, "direction"),
        ({"metric": None}, "metric: Field required"),
        ({"colour": "blue"}, "colour: Extra inputs are not permitted"),
        ({"repeats": 1}, "repeats"),
        ({"budgetSeconds": 0}, "budgetSeconds"),
        ({"command": []}, "command"),
        (
            {"searchSpace": [{"name": "x", "type": "float", "low": 2.0, "high": -2.0}]},
            "'low' must be below 'high'",
        ),
        (
            {"searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0, "log": True}]},
            "log-scale parameter needs 'low' > 0",
        ),
        (
            {"searchSpace": [{"name": "x", "type": "categorical", "choices": ["a", 1]}]},
            "all of one kind",
        ),
        (
            {
                "searchSpace": [
                    {"name": "x", "type": "float", "low": -2.0, "high": 2.0},
                    {"name": "x", "type": "float", "low": -2.0, "high": 2.0},
                ]
            },
            "names must be unique",
        ),
        ({"paramsFile": "../params.json"}, "paramsFile"),
        ({"preload": ["json"], "command": ["bash", "run.sh"]}, "preload needs a command"),
    ],
)
def test_invalid_task_yaml_names_the_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    root = _task_copy(tmp_path)
    _edit_yaml(root, **change)
    with pytest.raises(TaskError) as caught:
        load_task(root)
    assert str(root) in str(caught.value) and message in str(caught.value)


def test_missing_pieces_are_reported(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="not a directory"):
        load_task(tmp_path / "nowhere")
    with pytest.raises(TaskError, match=r"task\.yaml is missing"):
        load_task(tmp_path)
    root = _task_copy(tmp_path)
    (root / "task.yaml").write_text("name: [unclosed")
    with pytest.raises(TaskError, match="cannot be read: neither JSON nor YAML"):
        load_task(root)
    (root / "task.yaml").write_text("- a list")
    with pytest.raises(TaskError, match="mapping"):
        load_task(root)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (None, "params.json is missing"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"x": 0.0}', "missing parameters: y"),
        ('{"x": 5.0, "y": 0.0}', "x=5.0 is outside"),
        ('{"x": "left", "y": 0.0}', "is not a number"),
    ],
)
def test_bad_params_file(tmp_path: Path, params: str | None, message: str) -> None:
    root = _task_copy(tmp_path)
    target = root / "candidate" / "params.json"
    if params is None:
        target.unlink()
    else:
        target.write_text(params)
    with pytest.raises(TaskError, match=message):
        load_task(root)


def test_a_params_file_that_is_a_pipe_or_huge_is_refused_unread(tmp_path: Path) -> None:
    root = _task_copy(tmp_path)
    target = root / "candidate" / "params.json"
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(TaskError, match=r"params\.json: not a regular file"):
        load_task(root)
    target.unlink()
    target.write_text('{"x": "' + "a" * MAX_DOCUMENT_BYTES + '"}')
    with pytest.raises(TaskError, match="byte limit"):
        load_task(root)


def test_missing_candidate_folder(tmp_path: Path) -> None:
    root = _task_copy(tmp_path)
    shutil.rmtree(root / "candidate")
    with pytest.raises(TaskError, match="candidate/ is missing or empty"):
        load_task(root)


def test_int_and_categorical_parameters_are_checked(tmp_path: Path) -> None:
    root = line_task(tmp_path / "t")
    spec = json.loads((root / "task.yaml").read_text())
    spec["searchSpace"] += [
        {"name": "n", "type": "int", "low": 1, "high": 64, "log": True},
        {"name": "kind", "type": "categorical", "choices": ["a", "b"]},
    ]
    (root / "task.yaml").write_text(json.dumps(spec))
    (root / "candidate" / "params.json").write_text('{"x": 1.0, "n": 8.0, "kind": "b"}')
    task = load_task(root)
    assert task.start_params == {"x": 1.0, "n": 8, "kind": "b"}
    assert isinstance(task.start_params["n"], int)
    with pytest.raises(ValueError, match="not one of"):
        task.spec.check_params({"x": 1.0, "n": 8, "kind": "c"})
    with pytest.raises(ValueError, match="whole number"):
        task.spec.check_params({"x": 1.0, "n": 8.5, "kind": "a"})


def test_metric_line_parsing() -> None:
    out = "\n".join(
        [
            "noise",
            'ZEROSHOT_METRIC {"name": "loss", "value": 3}',
            'ZEROSHOT_METRIC {"name": "other", "value": 1.0}',
            "ZEROSHOT_METRIC {broken",
            'ZEROSHOT_METRIC {"name": "loss", "value": NaN}',
            'ZEROSHOT_METRIC {"name": "loss", "value": true}',
            '  ZEROSHOT_METRIC {"name": "loss", "value": 9.0}',
        ]
    )
    assert parse_metric(out, "loss") == 3.0
    assert parse_metric(out + '\nZEROSHOT_METRIC {"name": "loss", "value": 0.5}', "loss") == 0.5
    assert parse_metric("nothing here", "loss") is None


def test_payloads_fit_their_contract_types() -> None:
    types = payload_types()
    request = ScoutInput(task="t", study="s", workspace="w", round=1, strategy="synthesis")
    assert check_value(request.to_wire(), types["ScoutInput"]) == []
    verdict = ReviewVerdict(
        verdict="accepted", reason="r", corrections="", title="t", description="d", adopt=False
    )
    assert check_value(verdict.to_wire(), types["ReviewVerdict"]) == []
    result = types["ResearchResult"].fields
    assert result["metric"].required is False and result["candidateId"].required is True
    assert result["paramsJson"].type.kind == "string" and "params" not in result
    change = types["Change"].fields  # what a researcher must give, what it may
    assert {n for n, f in change.items() if f.required} == {
        "parentId",
        "strategy",
        "approach",
        "rationale",
    }
    assert change["edits"].type.kind == "array" and change["paramsJson"].required is False
    assert "metric" not in change and "candidateSha256" not in change


def test_parameters_are_json_text_on_the_wire() -> None:
    proposal = ScoutProposal(
        strategy="exploration", approach="a", params={"x": 1.0, "k": "b"}, rationale="r"
    )
    wire = proposal.to_wire()
    assert wire["paramsJson"] == '{"k": "b", "x": 1.0}' and "params" not in wire
    assert ScoutProposal.from_wire(wire) == proposal
    with pytest.raises(ValueError, match="paramsJson is not JSON"):
        ScoutProposal.from_wire({**wire, "paramsJson": "{oops"})
