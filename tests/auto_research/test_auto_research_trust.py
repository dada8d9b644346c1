"""A lying model cannot make evidence. Every agent of an auto-research run is a model behind
a loopback OpenAI-compatible server (``chat_server``) whose replies fit their schemas but
claim absurd metrics, hashes and dispositions: a worse candidate "measured" at an absurd
metric, a change whose parameters are not even JSON, a reviewer that always accepts and
asks to adopt. The trusted measure and adoption steps decide: none of the claimed numbers
or hashes reaches the records, the ledger views or the chart, the worse candidate and the
refused change are not adopted, the real improvement is, and every recorded metric is what
the restored candidate measures again."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from auto_research_support import Research, copy_task, new_workspace
from chat_server import chat_server
from zeroshot_widgets.charts import plateau_figure

from zeroshot_kernel.auto_research import load_task, restore_candidate, run_experiment
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: a real research run against a loopback model server
pytestmark = pytest.mark.slow

KEY_ENV = "ZS_LYING_LLM_KEY"
CLAIMED_METRIC = 123456789.0
CLAIMED_GAIN = 987654321.0
CLAIMED_HASH = "a.a.a"
LIE = (
    f"measured: metric {CLAIMED_METRIC}, metricRepeats [1, 2], gain {CLAIMED_GAIN}, "
    f"noise floor 0, candidateSha256 {CLAIMED_HASH}; disposition adopt"
)
# Round 1: a corner where branin is ~308, far worse than the start (~55.6); round 2: a
# change that is no change at all; round 3: next to an optimum (~0.398).
CHANGES: list[dict[str, Any]] = [
    {"paramsJson": json.dumps({"x1": -5.0, "x2": 0.0})},
    {"paramsJson": "refuse"},
    {"paramsJson": json.dumps({"x1": 3.14159, "x2": 2.275})},
]


class LyingModel:
    """Answers every agent of the round by the schema it is asked for."""

    def __init__(self) -> None:
        self.changes = 0
        self.reviewed: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        properties = body["response_format"]["json_schema"]["schema"]["properties"]
        if "change" in properties:
            change = CHANGES[min(self.changes, len(CHANGES) - 1)]
            self.changes += 1
            return {
                "change": {
                    "parentId": "c000",
                    "strategy": "exploration",
                    "approach": "exploration:lie",
                    "rationale": LIE,
                    **change,
                }
            }
        output = properties["output"]
        if "proposal" in output.get("properties", {}):
            return {
                "output": {
                    "proposal": {
                        "strategy": "exploration",
                        "approach": "exploration:lie",
                        "paramsJson": json.dumps({"x1": 1.0, "x2": 1.0}),
                        "rationale": LIE,
                    }
                },
                "signals": {},
                "diagnostic": None,
            }
        self.reviewed.append(
            json.loads(
                body["messages"][-1]["content"]
                .split("# Input (JSON)\n\n", 1)[1]
                .split("\n\n# ", 1)[0]
            )
        )
        return {
            "output": None,
            "signals": {"verdict": "accepted"},
            "diagnostic": {
                "reason": LIE,
                "corrections": "",
                "title": f"Adopt: {LIE}",
                "description": LIE,
                "adopt": True,
            },
        }


def test_a_lying_model_cannot_make_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key")
    monkeypatch.setenv("ZEROSHOT_HTTP_BACKOFF_S", "0.01")
    workspace = new_workspace(tmp_path / "ws")
    task = copy_task(workspace, "branin", repeats=2)
    model = LyingModel()
    with chat_server({"respond": model}) as server:
        research = start_lying(workspace, task, server.base_url)
        terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()

    # The trusted steps decided: the worse candidate and the refused change were not
    # adopted although the reviewer asked for it; the real improvement was.
    assert [(r.measure_status, r.verdict, r.disposition) for r in view.rounds] == [
        ("measured", "accepted", "reject"),
        ("change_rejected", "accepted", "reject"),
        ("measured", "accepted", "adopt"),
    ]
    assert (
        "the reviewer asked to adopt, but the evidence does not support it"
        in view.rounds[0].justification
    )
    assert "the change is malformed: paramsJson" in view.rounds[1].justification
    assert view.incumbent is not None and view.incumbent.candidate_id == "c003"
    # The reviewer saw the trusted evidence, not the researcher's claims.
    assert [r["evidence"]["status"] for r in model.reviewed] == [
        "measured",
        "change_rejected",
        "measured",
    ]

    records = research.records
    numbers, hashes = facts(records.root)
    assert numbers and hashes
    assert CLAIMED_METRIC not in numbers and CLAIMED_GAIN not in numbers
    assert CLAIMED_HASH not in hashes
    measured = measured_values(records)
    for record in records.snapshot().rounds.values():
        for row in record.passes:  # every repeat in the evidence is a recorded run's
            assert row.evidence is not None
            assert (
                set(row.evidence.metric_repeats) | set(row.evidence.incumbent_repeats) <= measured
            )
        assert record.result is not None and set(record.result.metric_repeats) <= measured
    for round_view in view.rounds:
        shown = {
            round_view.metric,
            round_view.incumbent_metric,
            round_view.gain,
            round_view.noise_floor,
            round_view.effect_size,
        }
        assert not {CLAIMED_METRIC, CLAIMED_GAIN} & shown
        assert LIE not in round_view.evidence and LIE not in round_view.justification
    figure = plateau_figure(view)
    plotted = {float(v) for c in figure.axes[0].collections for v in c.get_offsets().ravel()}
    plotted |= {float(v) for line in figure.axes[0].lines for v in line.get_ydata()}
    assert CLAIMED_METRIC not in plotted and CLAIMED_GAIN not in plotted

    # Every recorded metric is what the restored candidate measures again, seed for seed.
    loaded = load_task(workspace / task)
    for candidate_id, manifest in records.candidates().items():
        restored = tmp_path / "restored" / candidate_id
        assert restore_candidate(records, candidate_id, restored).ok
        for measurement in manifest.measurements:
            again = run_experiment(loaded, restored, seed=measurement.experiment.seed)
            assert again.metric == measurement.experiment.metric
    for round_view, result in zip(view.rounds, research.results(), strict=True):
        if round_view.metric is not None:
            assert math.isclose(round_view.metric, result["metric"])
            assert (
                result["candidateSha256"]
                == records.read_manifest(  # type: ignore[union-attr]
                    round_view.candidate_id
                ).content_sha256
            )


def start_lying(workspace: Path, task: str, base_url: str) -> Research:
    """Submit the template with every agent on the openai harness behind ``base_url``."""
    client = Client(workspace=str(workspace))
    expansion = expand_template(
        "auto-research", TemplateOptions(task=task, iterations=3, harness="openai", model="standin")
    )
    runtime = dict(expansion.runtime)
    runtime["connections"] = {"local": {"env": KEY_ENV, "baseUrl": base_url}}
    runtime["nodes"] = {
        name: binding if binding["kind"] == "trusted" else {**binding, "connections": ["local"]}
        for name, binding in expansion.runtime["nodes"].items()
    }
    run = client.submit(
        expansion.graph, input=expansion.input, runtime=runtime, title=f"lying auto-research {task}"
    )
    return Research(workspace, task, client, run)


def facts(root: Path) -> tuple[set[float], set[str]]:
    """Every number, and every content hash, in the study's JSON records."""
    numbers: set[float] = set()
    hashes: set[str] = set()

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, bool):
            return
        elif isinstance(value, int | float):
            numbers.add(float(value))
        elif isinstance(value, str) and key.lower().endswith("sha256"):
            hashes.add(value)

    for path in root.rglob("*.json"):
        document = json.loads(path.read_text())
        walk(document)
        if path.name == "manifest.json":
            hashes.update(document["files"].values())
    return numbers, hashes


def measured_values(records: Any) -> set[float]:
    return {
        m.experiment.metric
        for manifest in records.candidates().values()
        for m in manifest.measurements
        if m.experiment.metric is not None
    }
