"""The study browser, the comparison of studies and the export of a study, over real ledgers
holding real embedded research runs: two studies (rosenbrock and branin, two rounds each)
run at once in one workspace; a third, on PostgreSQL, when the suite can start one. The
browser's "Export CSV" writes each ticked study's rounds under ``<workspace>/exports``."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from workbench_support import PNG_SIGNATURE
from zeroshot_widgets import StudyBrowser, compare_studies, comparison_figure
from zeroshot_widgets.study_browser import CHAR_PX

from zeroshot_kernel.auto_research import ResearchRecords, Study, StudyError, study_rows
from zeroshot_kernel.auto_research.studies.table import COLUMNS, filter_rows, sort_rows
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.client import Client, Run
from zeroshot_kernel.ledger.events import SucceededResult
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: real research runs over SQLite and PostgreSQL
pytestmark = pytest.mark.slow

ROUNDS = 2
STUDIES = {"alpha": "rosenbrock", "beta": "branin"}


def _submit(client: Client, study: str, task: str) -> Run:
    expansion = expand_template(
        "auto-research", TemplateOptions(task=task, iterations=ROUNDS, study=study)
    )
    return client.submit(
        expansion.graph,
        input=expansion.input,
        runtime=expansion.runtime,
        title=f"auto-research {task}",
    )


@pytest.fixture(scope="module")
def two_studies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Client, dict[str, Run]]:
    """Two finished studies in one workspace and its SQLite ledger (run side by side)."""
    workspace = tmp_path_factory.mktemp("studies")
    (workspace / ".zeroshot").mkdir()
    client = Client(workspace=str(workspace))
    runs = {study: _submit(client, study, task) for study, task in STUDIES.items()}
    for run in runs.values():
        assert isinstance(run.wait(240), SucceededResult)
    return client, runs


def test_study_rows_count_rounds_adoptions_and_best(
    two_studies: tuple[Client, dict[str, Run]],
) -> None:
    client, runs = two_studies
    rows = {row.name: row for row in study_rows(client)}
    assert set(rows) == set(STUDIES)
    for name, row in rows.items():
        view = load_research_view(client.ledger, runs[name].id)
        incumbent = ResearchRecords(client.workspace, name).read_incumbent()
        assert incumbent is not None and view.incumbent is not None
        assert row.task == STUDIES[name] and row.metric == STUDIES[name]
        assert row.direction == "minimize" and row.direction_label == "lower is better"
        assert row.status == "succeeded" and row.harness_model == "local/default"
        assert [r.run_id for r in row.runs] == [runs[name].id]
        assert row.rounds == ROUNDS == len(view.rounds)
        assert row.adoptions == len(view.adoptions)
        assert row.best == incumbent.metric and row.incumbent is not None
        assert row.incumbent.candidate_id == incumbent.candidate_id
        assert row.model_calls == 5 * ROUNDS  # 3 scouts, researcher, reviewer; no corrections
        assert row.tokens is None and row.cost_usd is None and row.cost_label == "-"
        assert row.duration_s > 0 and row.started is not None
        # the curve: the start, then one point per round, best so far as the view has it
        assert [p.evaluations for p in row.curve] == [0, 1, 2]
        assert [p.model_calls for p in row.curve] == [0, 5, 10]
        assert [p.best for p in row.curve[1:]] == list(view.best_so_far)
        assert row.curve[0].best == view.rounds[0].incumbent_metric


def test_sorting_and_filtering_change_the_rows(two_studies: tuple[Client, dict[str, Run]]) -> None:
    client, _ = two_studies
    rows = study_rows(client)
    by_best = [r.name for r in sorted(rows, key=lambda r: r.best or 0.0)]
    assert [r.name for r in sort_rows(rows, "best")] == by_best  # minimize: lower first
    assert [r.name for r in sort_rows(rows, "best", descending=True)] == by_best[::-1]
    assert [r.name for r in sort_rows(rows, "study")] == ["alpha", "beta"]
    assert [r.name for r in filter_rows(rows, "BRANIN")] == ["beta"]
    assert [r.name for r in filter_rows(rows, "local succeeded")] == ["alpha", "beta"]
    assert filter_rows(rows, "claude") == []
    with pytest.raises(ValueError, match="no column"):
        sort_rows(rows, "colour")

    browser = StudyBrowser(client, sort="study", descending=False, interval_s=0.1)
    assert browser.order == ["alpha", "beta"]
    assert "2 of 2 studies" in browser.summary.value
    # a header click sorts by its column; a second click reverses
    header = next(
        c for c in browser.grid.children if getattr(c, "description", "").startswith("study")
    )
    header.click()
    assert browser.order == ["beta", "alpha"] and browser.descending.value
    browser.sort_by("best")
    assert browser.order == by_best and not browser.descending.value
    assert (
        browser.grid.children[1 + browser.sort_column.options.index("best")].description == "best ▲"
    )
    browser.filter.value = "rosenbrock"
    assert browser.order == ["alpha"]
    assert "1 of 2 studies" in browser.summary.value
    rendered = "".join(c.value for c in browser.grid.children if c.__class__.__name__ == "HTML")
    assert "alpha" in rendered and "beta" not in rendered
    browser.filter.value = "nosuchstudy"
    assert "none of the 2 studies matches <code>nosuchstudy</code>" in browser.summary.value
    browser.filter.value = ""
    browser.show_runs.value = False
    assert len(browser.grid.children) == 13 * 3  # the header and one line per study
    browser.close()


def test_an_empty_workspace_says_how_to_start_a_study(tmp_path: Path) -> None:
    (tmp_path / ".zeroshot").mkdir()
    browser = StudyBrowser(Client(workspace=str(tmp_path)), interval_s=0.1)
    assert browser.summary.value.startswith("no study in this workspace's ledger yet: start one")
    assert "zeroshot research run" in browser.summary.value
    browser.close()


def test_selected_studies_compare_as_two_panels_and_rows_open_monitors(
    two_studies: tuple[Client, dict[str, Run]],
) -> None:
    client, runs = two_studies
    browser = StudyBrowser(client, sort="study", descending=False, interval_s=0.1)
    assert browser.compare() is None and "tick one" in browser.message.value
    assert browser.compare_button.disabled
    checkboxes = [c for c in browser.grid.children if c.__class__.__name__ == "Checkbox"]
    assert len(checkboxes) == 2
    for box in checkboxes:
        box.value = True  # as a user ticks them
    assert browser.selected == {"alpha", "beta"} and not browser.compare_button.disabled
    browser.compare_button.click()
    comparison = browser.comparison
    assert comparison is not None and browser.compare_box.children == (comparison,)
    png = bytes(comparison.chart.value)
    assert png[:8] == PNG_SIGNATURE and len(png) > 10_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1200, 500)
    assert "c0" in comparison.incumbents.value and "lower is better" in comparison.incumbents.value
    for name in STUDIES:
        assert (
            f"<th style='padding:2px 10px;text-align:left'>{name}</th>"
            in comparison.incumbents.value
        )

    figure = comparison_figure(comparison.rows)
    left, right = figure.axes
    for axes in (left, right):
        labels = [line.get_label() for line in axes.get_lines()]
        assert [label.split(":")[0] for label in labels] == [
            "alpha — local/default",
            "beta — local/default",
        ]
    assert left.get_xlabel() == "candidates measured"
    assert right.get_xlabel() == "model calls (agent executions)"
    assert left.get_ylabel() == "best, change from its start (lower is better)"
    assert list(left.get_lines()[0].get_xdata()) == [0, 1, 2]
    assert list(right.get_lines()[0].get_xdata()) == [0, 5, 10]
    # rosenbrock and branin share no scale: each curve starts at 0, relative to its start,
    # and the chart and the widget say so
    for line, row in zip(left.get_lines(), comparison.rows, strict=True):
        bests = [p.best for p in row.curve if p.best is not None]
        start = bests[0]
        assert list(line.get_ydata()) == pytest.approx([(b - start) / abs(start) for b in bests])
    warning = "different tasks: branin (branin), rosenbrock (rosenbrock); each curve is its best"
    assert any(warning in text.get_text() for text in figure.texts)
    assert warning in comparison.warning.value
    one_task = comparison_figure([comparison.rows[0]])
    assert not any("different tasks" in text.get_text() for text in one_task.texts)
    assert "lower is better" in one_task.axes[0].get_ylabel()
    assert not one_task.axes[0].get_ylabel().startswith("best, change")

    # the same from a script, by name; an unknown name is refused with the known ones
    assert compare_studies(client, ["beta"]).rows[0].name == "beta"
    with pytest.raises(StudyError, match=r"no study 'gamma' in .*; studies: alpha, beta"):
        compare_studies(client, ["gamma"])

    monitor = browser.open_study("beta")
    assert monitor is not None and monitor.run_id == runs["beta"].id
    assert browser.monitor_box.children == (monitor,)
    opened = [c for c in browser.grid.children if getattr(c, "description", "") == "open"]
    opened[0].click()  # alpha's row (sorted by study)
    assert browser.monitor is not None and browser.monitor.run_id == runs["alpha"].id
    browser.close()


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_export_csv_writes_each_selected_studys_rounds_into_the_workspace(
    two_studies: tuple[Client, dict[str, Run]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, runs = two_studies
    browser = StudyBrowser(client, sort="study", descending=False)
    assert browser.export_button.disabled
    assert browser.export_csv() == [] and "tick one" in browser.exported.value
    for box in [c for c in browser.grid.children if c.__class__.__name__ == "Checkbox"]:
        box.value = True  # as a user ticks them
    assert not browser.export_button.disabled
    browser.export_button.click()

    folder = Path(client.workspace).resolve() / "exports"
    expected = [folder / f"{name}-rounds.csv" for name in ("alpha", "beta")]
    assert browser.exported_paths == expected
    for name, path in zip(("alpha", "beta"), expected, strict=True):
        assert f"wrote <code>{html.escape(str(path))}</code> ({ROUNDS} rounds)" in (
            browser.exported.value
        )
        read = _read_csv(path)
        columns, rows = Study.open(client.workspace, name, client=client).flat_rows("rounds")
        assert list(read[0]) == columns
        assert read == [{k: "" if v is None else str(v) for k, v in row.items()} for row in rows]
        assert [row["round"] for row in read] == ["1", "2"]
        assert {row["run_id"] for row in read} == {runs[name].id}
        assert all(row["candidate_id"] and row["metric"] for row in read)
    assert sorted(p.name for p in folder.iterdir()) == ["alpha-rounds.csv", "beta-rounds.csv"]

    # a failed write leaves the previous file whole and no temporary file behind
    before = expected[1].read_bytes()

    def refuse(source: str, target: str) -> None:
        raise PermissionError(13, "Permission denied", target)

    monkeypatch.setattr(os, "replace", refuse)
    assert browser.export_csv(["beta"]) == []
    assert "not exported: beta: [Errno 13] Permission denied" in browser.exported.value
    monkeypatch.undo()
    assert expected[1].read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["alpha-rounds.csv", "beta-rounds.csv"]

    # another folder; a study only the ledger knows is named, the others still written
    elsewhere = StudyBrowser(client, export_folder=tmp_path / "out")
    assert elsewhere.export_csv(["beta", "gamma"]) == [tmp_path / "out" / "beta-rounds.csv"]
    assert _read_csv(tmp_path / "out" / "beta-rounds.csv") == _read_csv(expected[1])
    assert "not exported: gamma: no study" in elsewhere.exported.value
    browser.close()
    elsewhere.close()


def test_to_dataframe_has_one_row_per_round_and_per_candidate(
    two_studies: tuple[Client, dict[str, Run]],
) -> None:
    client, runs = two_studies
    study = Study.open(client.workspace, "alpha", client=client)
    records = ResearchRecords(client.workspace, "alpha").snapshot()
    view = load_research_view(client.ledger, runs["alpha"].id)

    rounds = study.to_dataframe()
    assert list(rounds["round"]) == [1, 2]
    assert {
        "run_id",
        "candidate_id",
        "param.x",
        "param.y",
        "metric",
        "disposition",
        "best_so_far",
        "verdict",
        "harness",
        "model",
    } <= set(rounds.columns)
    for row, number in zip(rounds.to_dict("records"), (1, 2), strict=True):
        result = records.rounds[number].result
        assert result is not None
        assert row["candidate_id"] == result.candidate_id
        assert row["metric"] == result.metric and row["disposition"] == result.disposition
        assert row["param.x"] == result.params["x"] and row["param.y"] == result.params["y"]
        assert row["run_id"] == runs["alpha"].id
        assert (row["harness"], row["model"]) == ("local", "default")
        assert row["verdict"] == view.rounds[number - 1].verdict
        assert row["best_so_far"] == view.best_so_far[number - 1]

    candidates = study.to_dataframe("candidates")
    assert list(candidates["candidate_id"]) == sorted(records.candidates)
    assert {
        "round",
        "content_sha256",
        "param.x",
        "metric_mean",
        "metric_std",
        "metric_n",
        "decision",
        "verdict",
        "harness",
        "model",
    } <= set(candidates.columns)
    baseline = candidates.iloc[0]
    assert baseline["decision"] == "baseline" and baseline["round"] == 0
    for row in candidates.to_dict("records"):
        manifest = records.candidates[row["candidate_id"]]
        assert row["content_sha256"] == manifest.content_sha256
        assert row["metric_n"] == len(manifest.values)
        assert row["metric_mean"] == pytest.approx(manifest.metric)
    assert list(candidates["incumbent"]).count(True) == 1

    with pytest.raises(StudyError, match=r"no study 'gamma'.*alpha, beta"):
        Study.open(client.workspace, "gamma")
    with pytest.raises(StudyError, match="study name"):
        Study.open(client.workspace, "../alpha")


def _zeroshot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)},
    )


def test_the_cli_exports_csv_and_camel_case_json(
    two_studies: tuple[Client, dict[str, Run]], tmp_path: Path
) -> None:
    client, _ = two_studies
    study = Study.open(client.workspace, "beta", client=client)
    target = tmp_path / "beta.csv"
    done = _zeroshot(client.workspace, "research", "export", "beta", "--csv", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and f"wrote {ROUNDS} rounds of study beta" in done.stderr
    with target.open(newline="") as handle:
        read = list(csv.DictReader(handle))
    columns, rows = study.flat_rows("rounds")
    assert list(read[0]) == columns
    assert read == [{k: "" if v is None else str(v) for k, v in row.items()} for row in rows]

    as_json = _zeroshot(client.workspace, "research", "export", "beta", "--json", "--candidates")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert [c["candidateId"] for c in document] == [c["candidate_id"] for c in study.candidates()]
    assert {
        "candidateId",
        "parentId",
        "contentSha256",
        "metricMean",
        "metricStd",
        "metricN",
        "params",
        "decision",
        "verdict",
    } <= set(document[0])
    assert all("_" not in key for row in document for key in row)
    assert set(document[0]["params"]) == {"x1", "x2"}  # parameters keep their own names

    to_stdout = _zeroshot(client.workspace, "research", "export", "beta", "--csv", "-")
    assert list(csv.DictReader(io.StringIO(to_stdout.stdout))) == read

    for args, message in [
        (("gamma", "--csv", str(tmp_path / "x.csv")), "error: no study 'gamma'"),
        (("beta", "--csv", str(tmp_path / "missing" / "x.csv")), "error: cannot write"),
        (("beta",), "error: give one of --csv FILE and --json"),
        (("beta", "--csv", "a.csv", "--json"), "error: give one of --csv FILE and --json"),
    ]:
        failed = _zeroshot(client.workspace, "research", "export", *args)
        assert failed.returncode == 2, failed
        assert failed.stderr.startswith(message) and failed.stderr.count("\n") == 1, failed
        assert "Traceback" not in failed.stderr


def test_study_rows_over_a_postgresql_ledger(postgres_url: str, tmp_path: Path) -> None:
    (tmp_path / ".zeroshot").mkdir()
    client = Client(postgres_url, workspace=str(tmp_path))
    run = _submit(client, "gamma", "branin")
    assert isinstance(run.wait(240), SucceededResult)
    [row] = study_rows(client)
    view = load_research_view(client.ledger, run.id)
    assert (row.name, row.task, row.status) == ("gamma", "branin", "succeeded")
    assert row.rounds == ROUNDS and row.adoptions == len(view.adoptions)
    assert [r.run_id for r in row.runs] == [run.id]
    assert row.best == ResearchRecords(tmp_path, "gamma").read_incumbent().metric  # type: ignore[union-attr]
    browser = StudyBrowser(client)
    assert browser.order == ["gamma"]
    browser.close()
    client.close()


def test_the_table_shows_every_header_and_value_whole_at_1280_px(
    two_studies: tuple[Client, dict[str, Run]],
) -> None:
    """Issue 30: at 1,280 px the headers read "r…", "a…", "c…", "dur…", "op…" and run ids
    were cut. Each column is now at least as wide as its header and its widest value (at the
    widest character of its 12 px font), narrower screens scroll the table sideways, and
    "open" shows the monitor above the table, not below it."""
    client, runs = two_studies
    browser = StudyBrowser(client, sort="study", descending=False)
    tracks = re.findall(r"minmax\((\d+)px, (\d+)fr\)", browser.grid.layout.grid_template_columns)
    assert len(tracks) == len(COLUMNS)
    least = {column: int(low) for column, (low, _) in zip(COLUMNS, tracks, strict=True)}
    sorted_by = "study ▲"
    for column in COLUMNS:
        header = sorted_by if column == "study" else column
        assert least[column] >= len(header) * CHAR_PX, column
    for run in runs.values():
        assert least["study"] >= len(f"  ↳ {run.id}") * CHAR_PX  # the run id, whole
    cells = [c.value for c in browser.grid.children if isinstance(getattr(c, "value", 0), str)]
    started = [v for v in cells if "title='20" in v]
    assert started and all(re.search(r">\d\d-\d\d \d\d:\d\d<", v) for v in started)
    assert browser.grid.layout.overflow == "auto"  # narrower: it scrolls, nothing is cut
    opens = [c for c in browser.grid.children if getattr(c, "description", "") == "open"]
    assert opens and all("zeroshot-open" in c._dom_classes for c in opens)
    assert ".zeroshot-open" in browser.children[0].value and "padding:0 4px" in (
        browser.children[0].value
    )
    opens[0].click()
    assert browser.children.index(browser.monitor_box) < browser.children.index(browser.grid)
    assert browser.monitor_box.children == (browser.monitor,)
    browser.close()
