"""Inside a study: parameter importance, slice and parallel-coordinate figures and the
candidate view, over the records of real research (the embedded agents and the trusted
measure and adoption steps in this process; one real engine run for the ledger's review)."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import math
import re
from pathlib import Path

import matplotlib.image
import pytest
from matplotlib.collections import LineCollection, PathCollection
from quadrature_rules import SIMPSON, SIMPSON_LINE
from research_driver import STUDY, TEMPLATES, change, decide, drive, line_task, measure_pass
from workbench_support import PNG_SIGNATURE, TASK, finished_run
from zeroshot_widgets.study_views import (
    CandidateView,
    StudyInsights,
    importance_figure,
    importance_png,
    parallel_figure,
    parallel_png,
    slice_figure,
    slice_png,
)

from zeroshot_kernel.auto_research import ResearchRecords, load_task, restore_candidate_source
from zeroshot_kernel.auto_research.candidate_detail import (
    CandidateNotFound,
    candidate_choices,
    candidate_detail,
    candidate_for_round,
)
from zeroshot_kernel.auto_research.importance import (
    Importances,
    MeasuredStudy,
    load_measured,
    optuna_study,
    parameter_importance,
)
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.views import load_research_view

ROUNDS = 5


@pytest.fixture(scope="module")
def branin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose study ``study`` holds five real rounds of branin."""
    workspace = tmp_path_factory.mktemp("branin")
    drive(TEMPLATES / "branin", workspace, ROUNDS)
    return workspace


@pytest.fixture(scope="module")
def measured(branin: Path) -> MeasuredStudy:
    return load_measured(branin, STUDY)


def decode(png: bytes) -> tuple[int, ...]:
    assert png[:8] == PNG_SIGNATURE
    return matplotlib.image.imread(io.BytesIO(png), format="png").shape


# --- importance ---------------------------------------------------------------------------


def test_measured_candidates_come_from_the_records(branin: Path, measured: MeasuredStudy) -> None:
    records = ResearchRecords(branin, STUDY)
    manifests = records.candidates()
    assert measured.parameters == ("x1", "x2") and measured.direction == "minimize"
    assert len(measured.candidates) >= 3
    for candidate in measured.candidates:
        manifest = manifests[candidate.candidate_id]
        assert candidate.metric == manifest.metric and candidate.params == manifest.params
        assert candidate.round == manifest.round
    incumbent = records.read_incumbent()
    assert incumbent is not None and measured.incumbent is not None
    assert measured.incumbent.candidate_id == incumbent.candidate_id
    study = optuna_study(measured)
    assert len(study.trials) == len(measured.candidates)
    assert study.direction.name == "MINIMIZE"


@pytest.mark.parametrize("evaluator", ["ped-anova", "fanova", "mean-decrease-impurity"])
def test_importance_rates_each_parameter_with_weights_summing_to_one(
    measured: MeasuredStudy,
    evaluator: str,
) -> None:
    weights = parameter_importance(measured, evaluator=evaluator)  # type: ignore[arg-type]
    assert set(weights) == {"x1", "x2"}, weights.reason
    assert all(value >= 0 for value in weights.values())
    assert math.isclose(sum(weights.values()), 1.0, rel_tol=1e-9)
    assert list(weights.values()) == sorted(weights.values(), reverse=True)
    assert weights.measured == len(measured.candidates) and not weights.reason


def test_importance_accepts_records_and_an_optuna_study(
    branin: Path, measured: MeasuredStudy
) -> None:
    from_records = parameter_importance(ResearchRecords(branin, STUDY))
    assert dict(from_records) == dict(parameter_importance(optuna_study(measured)))
    assert from_records.evaluator == "PedAnovaImportanceEvaluator"


def test_too_few_measured_candidates_say_so(measured: MeasuredStudy) -> None:
    one = dataclasses.replace(measured, candidates=measured.candidates[:1])
    weights = parameter_importance(one)
    assert weights == {} and weights.reason.startswith("1 measured candidate(s)")
    assert "at least 2" in weights.reason
    assert parameter_importance(optuna_study(one)).reason == weights.reason
    none = parameter_importance(dataclasses.replace(measured, candidates=()))
    assert none == {} and none.reason.startswith("0 measured")


def test_a_constant_parameter_gets_no_weight(measured: MeasuredStudy) -> None:
    fixed = dataclasses.replace(
        measured,
        candidates=tuple(
            dataclasses.replace(c, params={**c.params, "x2": 5.0}) for c in measured.candidates
        ),
    )
    weights = parameter_importance(fixed)
    assert dict(weights) == {"x1": 1.0, "x2": 0.0} and weights.constant == ("x2",)
    assert "x2 held one value" in weights.note
    both = dataclasses.replace(
        fixed,
        candidates=tuple(
            dataclasses.replace(c, params={"x1": 1.0, "x2": 5.0}) for c in measured.candidates
        ),
    )
    assert parameter_importance(both) == {}
    assert "no parameter varied" in parameter_importance(both).reason


def test_a_single_parameter_task_carries_all_the_weight(tmp_path: Path) -> None:
    task = line_task(tmp_path / "line")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    records_for(workspace, STUDY).round_offset("test", str(task), load_task(task).spec)  # as a run
    for number, x in enumerate((0.8, 0.5), start=1):
        evidence = measure_pass(task, workspace, number, change({"x": x}))
        decide(task, workspace, evidence)
    measured = load_measured(workspace, STUDY)
    assert len(measured.candidates) == 3
    weights = parameter_importance(measured)
    assert dict(weights) == {"x": 1.0} and "only x varied" in weights.note
    figure = slice_figure(measured)
    assert [a.get_label() for a in figure.axes] == ["x", "round"]


def test_records_without_a_study_file_need_the_task_named(tmp_path: Path) -> None:
    task = line_task(tmp_path / "line")
    evidence = measure_pass(task, tmp_path, 1, change({"x": 0.7}))
    decide(task, tmp_path, evidence)
    unnamed = load_measured(tmp_path, STUDY)
    assert unnamed.candidates == () and "pass task=" in (unnamed.problem or "")
    assert parameter_importance(unnamed).reason == unnamed.problem
    named = load_measured(tmp_path, STUDY, task=str(task))
    assert [c.candidate_id for c in named.candidates] == ["c000", "c001"]


def test_an_unknown_study_says_so_and_names_the_workspaces_studies(branin: Path) -> None:
    unknown = load_measured(branin, "nosuch")
    assert unknown.problem == f"study 'nosuch' has no records yet; its studies: {STUDY}"
    insights = StudyInsights(str(branin), study="nosuch")  # the charts say it, no crash
    assert insights.importances is not None and insights.importances.reason == unknown.problem
    empty = load_measured(branin / "nowhere", "nosuch")
    assert "this workspace has no study yet: start one with `zeroshot research run" in (
        empty.problem or ""
    )


def test_an_unknown_evaluator_is_refused(measured: MeasuredStudy) -> None:
    with pytest.raises(ValueError, match="ped-anova"):
        parameter_importance(measured, evaluator="shap")  # type: ignore[arg-type]


# --- figures ------------------------------------------------------------------------------


def collection(axes: object, label: str) -> object:
    (found,) = [c for c in axes.collections if c.get_label() == label]  # type: ignore[attr-defined]
    return found


def test_slice_figure_has_a_subplot_per_parameter_and_a_point_per_candidate(
    measured: MeasuredStudy,
) -> None:
    figure = slice_figure(measured)
    assert [a.get_label() for a in figure.axes] == ["x1", "x2", "round"]
    incumbent = measured.incumbent
    assert incumbent is not None
    for axes, name in zip(figure.axes[:2], ("x1", "x2"), strict=True):
        points = collection(axes, "candidates")
        assert isinstance(points, PathCollection)
        offsets = points.get_offsets()
        assert len(offsets) == len(measured.candidates)
        assert [tuple(p) for p in offsets] == [
            (c.params[name], c.metric) for c in measured.candidates
        ]
        assert list(points.get_array()) == [c.round for c in measured.candidates]
        ring = collection(axes, "incumbent")
        assert [tuple(p) for p in ring.get_offsets()] == [  # type: ignore[attr-defined]
            (incumbent.params[name], incumbent.metric)
        ]
    assert decode(slice_png(measured))[2] in (3, 4)


def test_parallel_figure_draws_a_line_per_candidate_and_the_incumbent_on_top(
    measured: MeasuredStudy,
) -> None:
    figure = parallel_figure(measured)
    axes = figure.axes[0]
    lines = collection(axes, "candidates")
    assert isinstance(lines, LineCollection)
    segments = lines.get_segments()
    assert len(segments) == len(measured.candidates)
    assert all(len(s) == 3 for s in segments)  # x1, x2 and the metric
    assert all(0.0 <= y <= 1.0 for s in segments for _, y in s)
    assert list(lines.get_array()) == [c.metric for c in measured.candidates]
    (incumbent,) = [line for line in axes.lines if line.get_label() == "incumbent"]
    assert incumbent.get_zorder() > lines.get_zorder()
    best = min(c.metric for c in measured.candidates)
    assert measured.incumbent is not None and measured.incumbent.metric == best
    assert incumbent.get_ydata()[-1] == 0.0  # the best (lowest) metric, at the bottom
    assert [t.get_text() for t in axes.get_xticklabels()] == ["x1", "x2", "branin"]
    assert figure.axes[1].get_label() == "metric"
    decode(parallel_png(measured))


def test_importance_figure_has_a_bar_per_parameter(measured: MeasuredStudy) -> None:
    weights = parameter_importance(measured)
    figure = importance_figure(weights)
    bars = figure.axes[0].patches
    assert len(bars) == 2
    assert sorted(b.get_width() for b in bars) == sorted(weights.values())
    decode(importance_png(weights))
    empty = importance_figure(Importances(reason="1 measured candidate(s): too few"))
    assert not empty.axes[0].patches
    assert empty.axes[0].texts[0].get_text() == "1 measured candidate(s): too few"


# --- the candidate view -------------------------------------------------------------------


def test_candidate_view_of_an_adopted_round_shows_its_recorded_source_and_diff(
    branin: Path,
    tmp_path: Path,
) -> None:
    records = ResearchRecords(branin, STUDY)
    adopted = [
        r.result
        for r in records.snapshot().rounds.values()
        if r.result is not None and r.result.disposition == "adopt"
    ]
    assert adopted, "five branin rounds adopt at least once"
    result = adopted[-1]
    view = CandidateView(str(branin), study=STUDY, round=result.round)
    detail = view.detail
    assert detail is not None and view.picker.value == result.candidate_id
    assert detail.candidate_id == result.candidate_id and detail.verified

    restore_candidate_source(branin, STUDY, result.candidate_id, tmp_path / "restored")
    restored = {
        p.relative_to(tmp_path / "restored").as_posix(): p.read_text()
        for p in (tmp_path / "restored").rglob("*")
        if p.is_file()
    }
    assert {f.path: f.text for f in detail.files} == restored
    for text in restored.values():
        assert html.escape(text) in view.source_html.value

    parent = records.read_manifest(result.parent_id)
    assert parent is not None and detail.parent_id == result.parent_id
    for name in ("x1", "x2"):
        if parent.params[name] != detail.params[name]:
            assert f'-  "{name}": {json.dumps(parent.params[name])}' in detail.diff
            assert f'+  "{name}": {json.dumps(detail.params[name])}' in detail.diff
    assert "+++ b/params.json" in detail.diff
    assert html.escape(f'"x1": {json.dumps(detail.params["x1"])}') in view.diff_html.value

    manifest = records.read_manifest(result.candidate_id)
    assert manifest is not None
    assert detail.values == manifest.values and detail.mean == manifest.metric
    assert detail.n == len(manifest.values) >= 3 and detail.std is not None
    assert f"n {detail.n}" in view.measurements_html.value
    for value in manifest.values:
        assert f"{value:.6g}" in view.measurements_html.value

    review = detail.review
    assert review is not None and review.decision == "adopt"
    assert review.justification == result.justification
    assert review.supports_adoption and "beats the noise floor" in review.noise_decision
    assert html.escape(result.justification) in view.review_html.value
    assert "not in this ledger" in view.review_html.value  # records only: no client


def test_the_picker_lists_every_candidate_and_switches_between_them(branin: Path) -> None:
    choices = candidate_choices(branin, STUDY)
    manifests = ResearchRecords(branin, STUDY).candidates()
    assert [c.candidate_id for c in choices] == sorted(manifests)
    assert choices[0].decision == "baseline" and "incumbent" in " ".join(c.label for c in choices)
    view = CandidateView(str(branin), study=STUDY, candidate="c000")
    assert view.detail is not None and view.detail.review is None
    assert "starting candidate" in view.diff_html.value
    view.picker.value = "c001"
    assert view.detail.candidate_id == "c001"
    view.select_round(99)  # no such round: nothing is shown as if it were its candidate
    assert "round 99 of study" in view.message.value and "made no candidate" in view.message.value
    assert view.detail is None and view.picker.value is None and view.source_html.value == ""
    view.picker.value = "c001"
    assert view.detail is not None and view.detail.candidate_id == "c001"
    view.select("c999")
    assert "has no candidate <code>c999</code>" in view.message.value and view.detail is None
    unknown = CandidateView(str(branin), study="nosuch", round=1)
    assert f"no study &#x27;nosuch&#x27; in {branin}" in unknown.message.value
    with pytest.raises(CandidateNotFound):
        candidate_detail(branin, STUDY, "c999")


def test_study_insights_has_its_four_tabs(branin: Path, measured: MeasuredStudy) -> None:
    insights = StudyInsights(str(branin), study=STUDY)
    titles = [insights.tabs.get_title(i) for i in range(4)]
    assert titles == ["Importance", "Slices", "Parallel coordinates", "Candidates"]
    assert insights.importances is not None and set(insights.importances) == {"x1", "x2"}
    for image in (insights.importance_image, insights.slice_image, insights.parallel_image):
        decode(bytes(image.value))
    assert insights.candidates.detail is not None
    assert (
        insights.candidates.detail.candidate_id == measured.candidates[-1].candidate_id
        or insights.candidates.picker.value == candidate_choices(branin, STUDY)[-1].candidate_id
    )


def test_a_code_task_has_no_parameters_to_rate_and_its_diff_shows_code(tmp_path: Path) -> None:
    task = TEMPLATES / "quadrature"
    records_for(tmp_path, STUDY).round_offset("test", str(task), load_task(task).spec)  # as a run
    evidence = measure_pass(
        task,
        tmp_path,
        1,
        change({}, edits=[{"path": "quadrature.py", "kind": "contents", "text": SIMPSON}]),
    )
    assert evidence.status == "measured", evidence
    decide(task, tmp_path, evidence)

    measured = load_measured(tmp_path, STUDY)
    assert measured.search_space == () and len(measured.candidates) == 2
    weights = parameter_importance(measured)
    assert weights == {} and weights.reason.startswith("no parameters to rate")
    assert "no parameters to plot" in slice_figure(measured).axes[0].texts[0].get_text()
    assert not parallel_figure(measured).axes[0].collections

    assert candidate_for_round(tmp_path, STUDY, 1) == "c001"
    view = CandidateView(str(tmp_path), study=STUDY, round=1)
    assert view.detail is not None and view.detail.params == {}
    assert "+++ b/quadrature.py" in view.detail.diff
    assert f"+    {SIMPSON_LINE}" in view.detail.diff
    assert html.escape(SIMPSON_LINE) in view.diff_html.value
    assert html.escape(SIMPSON) in view.source_html.value
    insights = StudyInsights(str(tmp_path), study=STUDY)
    assert insights.importances == {} and "no parameters" in insights.importance_note.value


def test_with_a_client_the_review_carries_the_reviewers_verdict_from_the_ledger() -> None:
    done = finished_run()  # a real two-round engine run of rosenbrock
    view = load_research_view(done.client.ledger, done.run.id)
    first = view.rounds[0]
    assert first.verdict
    candidate = CandidateView(done.client, study=TASK, round=first.round)
    detail = candidate.detail
    assert detail is not None and detail.review is not None
    assert detail.candidate_id == first.candidate_id
    assert (detail.review.verdict, detail.review.reason) == (first.verdict, first.reason)
    assert html.escape(first.verdict) in candidate.review_html.value
    if first.diff:
        assert detail.diff == first.diff  # the same diff the rounds table shows


def test_figures_have_readable_ticks_and_show_points_at_the_bounds(
    measured: MeasuredStudy,
) -> None:
    """Issue 30: the parallel coordinates had ~7 px labels at the bounds only, and the
    slice plots cut points sitting on a bound. Now each parallel axis has several labels of
    at least 9 pt, and every point lies inside its axes' limits, with a margin."""
    figure = parallel_figure(measured)
    axes = figure.axes[0]
    ticks = [t for t in axes.texts if t.get_gid() == "tick"]
    space = measured.search_space
    for x in range(len(space) + 1):
        on_axis = [t for t in ticks if abs(t.get_position()[0] - (x - 0.03)) < 1e-9]
        assert len(on_axis) >= 3, (x, [t.get_text() for t in on_axis])
    assert all(t.get_fontsize() >= 9 for t in ticks)
    assert all(label.get_fontsize() >= 9 for label in axes.get_xticklabels())
    low, high = axes.get_ylim()
    assert low < 0 and high > 1  # lines reaching a bound (0 or 1) show whole

    edge = dataclasses.replace(
        measured,
        candidates=(
            dataclasses.replace(
                measured.candidates[0],
                params={p.name: p.low for p in space},  # every parameter on its lower bound
            ),
            *measured.candidates[1:],
        ),
    )
    slices = slice_figure(edge)
    for parameter in space:
        (axes,) = [a for a in slices.axes if a.get_label() == parameter.name]
        left, right = axes.get_xlim()
        assert parameter.low is not None and parameter.high is not None
        assert left < parameter.low and right > parameter.high, parameter.name
        labels = [t for t in axes.get_xticklabels() if left <= t.get_position()[0] <= right]
        assert len(labels) >= 4 and all(t.get_fontsize() >= 9 for t in labels)
        assert all(t.get_fontsize() >= 9 for t in axes.get_yticklabels())
        bottom, top = axes.get_ylim()
        for candidate in edge.candidates:
            assert bottom < candidate.metric < top


def test_the_candidate_view_wraps_the_review_at_its_edge(branin: Path) -> None:
    """Issue 30: the review's reason and evidence ran off the right edge. The review is a
    table as wide as the view (fixed layout) whose cells wrap, and the evidence box wraps."""
    view = CandidateView(str(branin), study=STUDY, round=1)
    review = view.review_html.value
    assert 'class="zeroshot-review"' in review
    table = re.search(r'<table class="zeroshot-review" style="([^"]*)"', review)
    assert table and "width:100%" in table.group(1) and "table-layout:fixed" in table.group(1)
    cells = re.findall(r"<td style='([^']*)'>", review)
    assert cells and all("white-space:normal" in c and "overflow-wrap:anywhere" in c for c in cells)
    evidence = re.search(r'<pre style="([^"]*)">', review)
    assert evidence and "white-space:pre-wrap" in evidence.group(1)
    assert "white-space:pre;" not in evidence.group(1)
    assert view.review_html.layout.width == "100%"
