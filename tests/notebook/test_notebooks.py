"""Every shipped notebook, executed top to bottom in a real kernel with small parameters.

Each runs in a copy of the repository's layout (``<ws>/.zeroshot``, ``<ws>/notebooks``), so
the notebooks find their workspace exactly as they do in a checkout or on Binder; bundled
tasks are found by name. Parameters are injected by papermill (an ``injected-parameters``
cell after the ``parameters`` cell), then nbclient executes and keeps the widget state.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import papermill
import pytest
from conftest import PROJECT_ROOT
from nbclient import NotebookClient
from workbench_support import PNG_SIGNATURE, finished_run, research_workspace, start_research
from zeroshot_widgets.batches import recorded_values

from zeroshot_kernel.admission.admit import verify_document
from zeroshot_kernel.auto_research import study_rows
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.batch import open_store, read_results, run_batch
from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.reading import loads_document
from zeroshot_kernel.ledger.events import NodeCompleted, SucceededResult

# slow: every notebook executed in a real kernel
pytestmark = pytest.mark.slow

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = PROJECT_ROOT / "notebooks"
RESEARCH_NOTEBOOK = PROJECT_ROOT / "research_templates" / "research.ipynb"


def execute(source: Path, root: Path, **parameters: Any) -> nbformat.NotebookNode:
    """Execute a copy of ``source`` from ``<root>/notebooks`` (``root`` being the workspace)
    and save it there."""
    (root / ".zeroshot").mkdir(parents=True, exist_ok=True)
    folder = root / "notebooks"
    folder.mkdir(exist_ok=True)
    target = folder / source.name
    papermill.execute_notebook(
        str(source), str(target), parameters=parameters, prepare_only=True, progress_bar=False
    )
    notebook = nbformat.read(target, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        startup_timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    ).execute()
    nbformat.write(notebook, target)
    return notebook


def outputs(notebook: nbformat.NotebookNode) -> list[dict[str, Any]]:
    return [
        output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    ]


def text(notebook: nbformat.NotebookNode) -> str:
    return "".join(output.get("text", "") for output in outputs(notebook))


def pngs(notebook: nbformat.NotebookNode) -> list[bytes]:
    return [
        base64.b64decode(output["data"]["image/png"])
        for output in outputs(notebook)
        if "image/png" in output.get("data", {})
    ]


def widget_models(notebook: nbformat.NotebookNode, name: str) -> list[dict[str, Any]]:
    """The saved state of every widget model of that kind (``IntProgressModel``...)."""
    state = notebook.metadata["widgets"][WIDGET_STATE]["state"]
    return [model for model in state.values() if model["model_name"] == name]


def html(notebook: nbformat.NotebookNode) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in outputs(notebook))


def report_rows(notebook: nbformat.NotebookNode) -> int:
    """Rows of the report's rounds table (one per round; not the monitor's snapshot)."""
    return sum(
        o.get("data", {}).get("text/html", "").count('<tr class="zeroshot-')
        for o in outputs(notebook)
        if "zeroshot-snapshot" not in o.get("data", {}).get("text/html", "")
    )


def has_parameters_cells(notebook: nbformat.NotebookNode) -> bool:
    tags = [cell.metadata.get("tags", []) for cell in notebook.cells]
    return ["parameters"] in tags and ["injected-parameters"] in tags


def test_the_quickstart_as_shipped_improves_the_incumbent(tmp_path: Path) -> None:
    """A newcomer's first run (the notebook's own parameters, nothing injected) adopts at
    least one candidate that beats the start beyond the gate's noise floor, so its first
    picture is a step down, not a flat line. (Measured before shipping: the bundled branin
    task at 3 rounds adopted in 49 of 50 runs; the old rosenbrock default in 3 of 6.)"""
    notebook = execute(NOTEBOOKS / "quickstart.ipynb", tmp_path)
    (run,) = Client(workspace=str(tmp_path)).runs()
    assert isinstance(run.terminal, SucceededResult), text(notebook)
    view = load_research_view(Client(workspace=str(tmp_path)).ledger, run.run_id)
    assert len(view.rounds) == 3
    adopted = [r for r in view.rounds if r.adopted]
    assert adopted, [(r.round, r.metric, r.gate_decision) for r in view.rounds]
    start = view.rounds[0].incumbent_metric
    assert start is not None and view.incumbent is not None
    assert view.incumbent.metric is not None and view.incumbent.metric < start
    for r in adopted:  # each adoption a real improvement: beyond the noise, by the gate
        assert r.gate_decision == "better" and r.gain > r.noise_floor > 0, r


def test_quickstart_launches_a_run_and_the_monitor_follows_it_to_the_end(
    tmp_path: Path,
) -> None:
    notebook = execute(NOTEBOOKS / "quickstart.ipynb", tmp_path, iterations=2)
    (run,) = Client(workspace=str(tmp_path)).runs()
    assert isinstance(run.terminal, SucceededResult)
    assert f"started {run.run_id}" in text(notebook)
    assert f"{run.run_id} succeeded" in text(notebook)

    (progress,) = [
        m
        for m in widget_models(notebook, "IntProgressModel")
        if m["state"]["description"] == "rounds"
    ]
    assert (progress["state"]["value"], progress["state"]["max"]) == (2, 2)
    phases = [m["state"]["value"] for m in widget_models(notebook, "HTMLModel")]
    assert any(">succeeded</span>" in value for value in phases)
    (chart,) = widget_models(notebook, "ImageModel")
    assert chart["state"]["format"] == "png" and chart.get("buffers"), "no chart image"

    # The monitor's output ends as its static snapshot (it needs no kernel, no widget
    # manager); the report's chart follows.
    (snapshot,) = [
        o
        for o in outputs(notebook)
        if "zeroshot-snapshot" in o.get("data", {}).get("text/html", "")
    ]
    assert WIDGET_VIEW not in snapshot["data"] and "image/png" in snapshot["data"]
    assert ">succeeded</span>" in snapshot["data"]["text/html"]
    snapshot_chart, report_chart = pngs(notebook)
    assert snapshot_chart.startswith(PNG_SIGNATURE) and report_chart.startswith(PNG_SIGNATURE)
    view = load_research_view(Client(workspace=str(tmp_path)).ledger, run.run_id)
    assert len(view.rounds) == 2
    assert report_rows(notebook) == 2


def test_studies_runs_two_studies_and_shows_them_in_the_browser(tmp_path: Path) -> None:
    notebook = execute(NOTEBOOKS / "studies.ipynb", tmp_path, iterations=1)
    client = Client(workspace=str(tmp_path))
    runs = client.runs()
    assert sorted(run.title for run in runs) == [
        "auto-research rosenbrock (alpha)",
        "auto-research rosenbrock (beta)",
    ]
    printed = text(notebook)
    for run in runs:
        assert isinstance(run.terminal, SucceededResult)
        study = run.title.split("(")[1].rstrip(")")
        assert f"{study}: {run.run_id} succeeded" in printed
    assert [row.name for row in study_rows(client)] == ["alpha", "beta"]
    # the browser's saved state: a row per study, Compare and Export CSV on offer
    cells = [m["state"]["value"] for m in widget_models(notebook, "HTMLModel")]
    for study in ("alpha", "beta"):
        assert any(f"<b>{study}</b>" in value for value in cells)
    buttons = {m["state"]["description"] for m in widget_models(notebook, "ButtonModel")}
    assert {"Compare", "Export CSV", "Refresh"} <= buttons
    assert not (tmp_path / "exports").exists()  # nothing is exported until asked


def test_custom_graph_validates_shows_a_mistake_and_runs_with_notebook_workers(
    tmp_path: Path,
) -> None:
    notebook = execute(NOTEBOOKS / "custom-graph.ipynb", tmp_path, topic="ledgers")
    printed = text(notebook)
    example = loads_document((PROJECT_ROOT / "examples" / "headline.yaml").read_text())
    identity = verify_document(example).identity
    assert f"graph: verified (identity {identity})" in printed  # the same graph as the example
    assert "reachability at root" in printed
    assert "admitted" in printed

    (run,) = Client(workspace=str(tmp_path)).runs()
    assert run.terminal == SucceededResult(
        status="succeeded",
        output={"headline": "What ledgers remember when everything else forgets"},
    )
    assert f"{run.cursor} terminal" in printed
    assert any(run.run_id in m["state"]["value"] for m in widget_models(notebook, "HTMLModel"))


def test_review_loop_tutorial_rejects_each_mistake_then_runs_the_saved_profile(
    tmp_path: Path,
) -> None:
    notebook = execute(NOTEBOOKS / "review-loop.ipynb", tmp_path)
    printed = text(notebook)
    for shown in (
        "error: schema_safety at root › children[0] › revise › body › round › children[0] "
        "› draft › inputBindings[2] › value",
        "error: loop_exit_satisfiability at root › children[0] › revise › until › labels",
        "error: ceiling_exceeded at root › children[0] › revise › maxIterations",
        "error: invalid_graph_shape at runtime › nodes › reviewer",
    ):
        assert shown in printed

    client = Client(workspace=str(tmp_path))
    profile = client.profiles.get("review-loop")
    assert profile.title == "Build a review loop"
    assert [saved.name for saved in client.profiles.list()] == ["review-loop"]
    (run,) = client.runs()
    assert run.terminal == SucceededResult(
        status="succeeded", output={"subject": "Fix the monitor freezing"}
    )
    assert client.ledger.admitted(run.run_id)["identity"] == profile.identity
    verdicts = [
        event.completion.outcome.signals["verdict"]
        for _, event in client.run(run.run_id).events(kinds={"node_completed"})
        if isinstance(event, NodeCompleted) and event.completion.reference.node == "review"
    ]
    assert verdicts == ["rejected", "rejected", "rejected", "accepted"]  # fed back, then fixed
    assert f"{run.run_id} succeeded after 4 rounds" in printed
    phases = [m["state"]["value"] for m in widget_models(notebook, "HTMLModel")]
    assert any(run.run_id in value for value in phases)
    assert any(">succeeded</span>" in value for value in phases)


def test_report_renders_a_finished_run_from_the_ledger_alone(tmp_path: Path) -> None:
    done = finished_run()
    notebook = execute(
        NOTEBOOKS / "report.ipynb", tmp_path, ledger=done.client.url, run_id=done.run.id
    )
    assert has_parameters_cells(notebook)
    (chart,) = pngs(notebook)
    assert chart.startswith(PNG_SIGNATURE)
    assert report_rows(notebook) == len(load_research_view(done.client.ledger, done.run.id).rounds)


def test_report_defaults_to_the_newest_auto_research_run(tmp_path: Path) -> None:
    """A run of another kind after the research run: the report with no parameters still
    shows the research run; an unknown run id gets a sentence that lists what exists."""
    research = start_research(research_workspace(tmp_path), iterations=1)
    research.run.wait(timeout=180)
    shutil.copytree(PROJECT_ROOT / "examples", tmp_path / "examples")
    arguments = ["--input", '{"topic": "ledgers"}', "--runtime", "@examples/headline-runtime.json"]
    headline = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "run", "examples/headline.yaml", *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert headline.returncode == 0, headline.stderr
    newest = max(research.client.runs(), key=lambda run: run.created_at)
    assert newest.run_id != research.run.id  # the report must look past it
    notebook = execute(NOTEBOOKS / "report.ipynb", tmp_path)
    assert f"run {research.run.id} in " in text(notebook)
    (chart,) = pngs(notebook)
    assert chart.startswith(PNG_SIGNATURE) and report_rows(notebook) == 1

    unknown = execute(NOTEBOOKS / "report.ipynb", tmp_path, run_id=newest.run_id)
    assert f"no auto-research run {newest.run_id!r} in " in text(unknown)
    assert f"its auto-research runs, newest first: {research.run.id}" in text(unknown)
    assert not pngs(unknown)
    assert not [o for o in outputs(unknown) if o["output_type"] == "error"]


def test_the_research_notebook_records_its_result_for_the_caller(tmp_path: Path) -> None:
    workspace = tmp_path / "item"
    ledger = tmp_path / "shared.db"
    notebook = execute(
        RESEARCH_NOTEBOOK,
        tmp_path,
        task="branin",
        iterations=2,
        workspace=str(workspace),
        ledger=str(ledger),
    )
    results = read_results(tmp_path / "notebooks" / RESEARCH_NOTEBOOK.name)
    view = load_research_view(Client(ledger).ledger, results["run_id"])
    assert results == {
        "task": "branin",
        "run_id": results["run_id"],
        "status": "succeeded",
        "rounds": 2,
        "metric": "branin",
        "best": view.incumbent.metric if view.incumbent else None,
        "incumbent": view.incumbent.candidate_id if view.incumbent else None,
        "plateau": view.plateau,
    }
    assert (workspace / ".zeroshot" / "research" / "branin" / "incumbent.json").is_file()
    assert has_parameters_cells(notebook) and pngs(notebook)


def test_batch_runs_research_notebooks_in_processes_into_one_ledger(tmp_path: Path) -> None:
    notebook = execute(
        NOTEBOOKS / "batch.ipynb",
        tmp_path,
        tasks=["rosenbrock", "branin"],
        iterations=1,
        workers=2,
        output_dir="out",
    )
    ledger = Client(workspace=str(tmp_path)).url  # the workspace's: the report finds it
    assert not (tmp_path / "notebooks" / "out" / "ledger.db").exists()
    runs = Client(ledger).runs()
    assert sorted(run.title for run in runs) == [
        "auto-research: branin",
        "auto-research: rosenbrock",
    ]
    (batch,) = open_store(ledger).batches()
    assert [item.status for item in batch.items] == ["succeeded", "succeeded"]
    for item, task in zip(batch.items, ("rosenbrock", "branin"), strict=True):
        assert item.output is not None
        assert has_parameters_cells(nbformat.read(item.output, as_version=4))
        assert item.results == read_results(item.output)
        assert item.results["task"] == task and item.results["status"] == "succeeded"
        assert item.results["run_id"] in {run.run_id for run in runs}
        assert item.results["run_id"] in html(notebook)
    assert len(pngs(notebook)) == 1

    report = execute(NOTEBOOKS / "batch-report.ipynb", tmp_path, metric="best")  # no ledger
    assert batch.batch_id in text(report)
    assert html(report).count('<tr class="zeroshot-batch-succeeded"') == 2
    assert "task: branin" in html(report) and "{&quot;" not in html(report)  # not raw JSON
    (chart,) = pngs(report)
    assert chart.startswith(PNG_SIGNATURE)
    bars = recorded_values(batch, "best")  # one panel per metric: they share no scale
    assert sorted(bars) == ["best (branin)", "best (rosenbrock)"]
    assert [label for label, _ in bars["best (branin)"]] == ["1: task=branin, workspace=branin"]

    # Run as a batch itself, the report shows the newest finished batch, not its own
    reporting = run_batch(
        NOTEBOOKS / "batch-report.ipynb",
        [{"metric": "best", "ledger": ledger}, {"metric": "nosuch", "ledger": ledger}],
        ledger=ledger,
        output_dir=tmp_path / "reports",
        allow_outside_workspace=True,
        progress=False,
    )
    item, unknown_metric = reporting.items
    assert item.status == "succeeded" and item.output is not None, item.error
    reported = nbformat.read(item.output, as_version=4)
    assert batch.batch_id in text(reported) and reporting.batch_id not in text(reported)
    assert unknown_metric.output is not None, unknown_metric.error
    unreported = nbformat.read(unknown_metric.output, as_version=4)
    assert not pngs(unreported)  # no chart for a name nothing recorded, and it says why
    assert "no item recorded a number named <code>nosuch</code>; numbers recorded: " in html(
        unreported
    )


def test_batch_report_without_a_batch_says_what_to_do(tmp_path: Path) -> None:
    """On a ledger with no batch, or with an unknown batch id: a sentence, no traceback."""
    report = execute(NOTEBOOKS / "batch-report.ipynb", tmp_path)  # an empty workspace
    printed = text(report)
    assert "no batch in this workspace's ledger yet: run one first" in printed
    assert "zeroshot batch research_templates/research.ipynb" in printed
    assert not [o for o in outputs(report) if o["output_type"] == "error"]
    assert not pngs(report)

    unknown = execute(
        NOTEBOOKS / "batch-report.ipynb", tmp_path / "unknown", batch_id="batch-nosuchbatchxx"
    )
    assert (
        "no batch 'batch-nosuchbatchxx' in this workspace's ledger; its batches, newest "
        "first: none yet: run one first"
    ) in text(unknown)
    assert not [o for o in outputs(unknown) if o["output_type"] == "error"]


def test_later_records_add_to_and_override_earlier_ones(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "from zeroshot_kernel.batch import record\nrecord(metric=1.5, rounds=2)"
            ),
            nbformat.v4.new_code_cell("record(metric=0.5, note='better')"),
        ]
    )
    NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    path = tmp_path / "recorded.ipynb"
    nbformat.write(notebook, path)
    assert read_results(path) == {"metric": 0.5, "rounds": 2, "note": "better"}
    assert "recorded: metric=0.5, note='better'" in str(notebook.cells[1].outputs)


def test_every_shipped_notebook_has_a_parameters_cell_and_no_outputs() -> None:
    shipped = [*sorted(NOTEBOOKS.glob("*.ipynb")), RESEARCH_NOTEBOOK]
    assert {path.name for path in shipped} >= {
        "quickstart.ipynb",
        "custom-graph.ipynb",
        "report.ipynb",
        "batch.ipynb",
        "batch-report.ipynb",
        "research.ipynb",
        "review-loop.ipynb",
        "studies.ipynb",
    }
    for path in shipped:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        assert [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])], path
        assert not any(c.get("outputs") for c in notebook.cells), f"{path} has outputs"
