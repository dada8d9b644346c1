"""Static charts, tables and the headless report, on a real run and on hand-made views."""

from __future__ import annotations

import base64
import dataclasses
import re
import struct

import pytest
from matplotlib.collections import PathCollection, PolyCollection
from workbench_support import PNG_SIGNATURE, finished_run
from zeroshot_widgets.charts import crashed, plateau_figure, plateau_png, plateau_stretches
from zeroshot_widgets.evidence_table import incumbent_card_html, rounds_table, rounds_table_html
from zeroshot_widgets.panels import IncumbentCard, PlateauChart, RoundsTable
from zeroshot_widgets.report import build_report, report_html, show_report

from zeroshot_kernel.auto_research.commands import round_line
from zeroshot_kernel.auto_research.protocol import REMEASURE
from zeroshot_kernel.auto_research.round_words import is_remeasure
from zeroshot_kernel.auto_research.views import (
    ResearchView,
    ResearchViewBuilder,
    RoundView,
    load_research_view,
    research_view,
)


def make_round(
    number: int,
    metric: float | None,
    incumbent: float,
    *,
    adopt: bool = False,
    status: str = "ok",
    reconsidered: bool = False,
    reason: str = "",
) -> RoundView:
    return RoundView(
        round=number,
        proposals=(),
        measure_status="measured",
        parent_id="c000",
        candidate_id=f"c{number:03d}",
        strategy="exploration",
        approach="exploration:tpe",
        params={"x": 1.0},
        experiment_status=status,
        metric=metric,
        incumbent_id="c000",
        incumbent_metric=incumbent,
        gain=0.0,
        noise_floor=0.1,
        effect_size=None,
        evidence="",
        disposition="adopt" if adopt else "reject",
        justification="",
        verdict="accepted",
        reason=reason,
        passes=1,
        reconsidered=reconsidered,
        reconsideration_due=False,
    )


def made_view(rounds: list[RoundView]) -> ResearchView:
    builder = ResearchViewBuilder()
    builder._rounds = rounds
    return builder.view()


# Rounds: 1 adopt, 2-4 plateau (3 crashed, 4 reconsidered), 5 adopt, 6 reject.
HAND_MADE = made_view(
    [
        make_round(1, 8.0, 10.0, adopt=True),
        make_round(2, 9.0, 8.0),
        make_round(3, None, 8.0, status="crashed"),
        make_round(4, 8.5, 8.0, reconsidered=True, reason="<b>not</b> better"),
        make_round(5, 5.0, 8.0, adopt=True),
        make_round(6, 6.0, 5.0),
    ]
)


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_SIGNATURE
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def marks(figure: object, label: str) -> int:
    axes = figure.axes[0]  # type: ignore[attr-defined]
    found = [c for c in axes.collections if c.get_label() == label]
    if not found:
        return 0
    (collection,) = found
    if isinstance(collection, PathCollection):
        return len(collection.get_offsets())
    assert isinstance(collection, PolyCollection)
    return len(collection.get_paths())


@pytest.fixture(scope="module")
def view() -> ResearchView:
    done = finished_run()
    return load_research_view(done.client.ledger, done.run.id)


@pytest.mark.slow  # a real research run (the view fixture)
def test_a_real_run_draws_a_sane_png_with_one_mark_per_round(view: ResearchView) -> None:
    assert len(view.rounds) == 2 and view.terminal is not None
    png = plateau_png(view)
    assert png_size(png) == (800, 400)
    assert 5_000 < len(png) < 500_000
    figure = plateau_figure(view)
    assert marks(figure, "adopted") == len(view.adoptions)
    # A round of the run may re-measure the incumbent (the challenge scout's lead): a mark of
    # its own, never a rejection.
    measured = [r for r in view.rounds if not r.adopted and not crashed(r)]
    again = [r for r in measured if is_remeasure(r.approach, r.candidate_id, r.parent_id)]
    assert marks(figure, "rejected") == len(measured) - len(again)
    assert marks(figure, "re-measured (the incumbent)") == len(again)
    (best,) = [line for line in figure.axes[0].lines if line.get_label() == "best so far"]
    assert list(best.get_xdata()) == [0, 1, 2]
    assert best.get_ydata()[-1] == view.best_so_far[-1]


def test_every_kind_of_mark_is_drawn_once_per_round_it_concerns() -> None:
    figure = plateau_figure(HAND_MADE, metric="loss", title="hand-made")
    assert marks(figure, "adopted") == 2 == len(HAND_MADE.adoptions)
    assert marks(figure, "rejected") == 3
    assert marks(figure, "crashed") == 1
    assert marks(figure, "a different approach") == 1 == len(HAND_MADE.reconsiderations)
    assert plateau_stretches(HAND_MADE) == [(2, 4)]
    assert marks(figure, "plateau") == 1
    axes = figure.axes[0]
    assert axes.get_ylabel() == "loss" and axes.get_title(loc="left") == "hand-made"
    assert {t.get_text() for t in axes.get_legend().get_texts()} >= {
        "adopted",
        "rejected",
        "crashed",
        "a different approach",  # a reconsideration, said plainly
        "plateau",
        "best so far",
    }
    assert png_size(plateau_png(HAND_MADE, size=(6, 3), dpi=50)) == (300, 150)


def test_a_thousand_rounds_draw_with_one_artist_per_kind_of_mark() -> None:
    rounds = [
        make_round(
            n,
            None if n % 50 == 0 else 100.0 - n / 20,
            100.0,
            adopt=n % 7 == 0,
            status="crashed" if n % 50 == 0 else "ok",
            reconsidered=n % 30 == 0,
        )
        for n in range(1, 1001)
    ]
    figure = plateau_figure(made_view(rounds))
    axes = figure.axes[0]
    assert len(axes.collections) == 6 and len(axes.lines) == 1  # whatever the length
    assert marks(figure, "crashed") == 20
    assert marks(figure, "adopted") == len(
        [n for n in range(1, 1001) if n % 7 == 0 and n % 50 != 0]
    )


def test_plateau_stretches_need_two_rounds_and_include_a_trailing_one() -> None:
    assert plateau_stretches(HAND_MADE, min_length=1) == [(2, 4), (6, 6)]
    assert plateau_stretches(HAND_MADE, min_length=4) == []


def test_an_empty_view_and_a_wide_metric_range_still_draw() -> None:
    empty = research_view([])
    figure = plateau_figure(empty)
    assert [t.get_text() for t in figure.axes[0].texts] == ["no reviewed rounds yet"]
    assert png_size(plateau_png(empty)) == (800, 400)
    wide = made_view([make_round(1, 0.5, 100.0, adopt=True), make_round(2, 0.001, 0.5, adopt=True)])
    assert plateau_figure(wide).axes[0].get_yscale() == "log"
    assert plateau_figure(HAND_MADE).axes[0].get_yscale() == "linear"


def test_a_round_is_one_line_with_its_details_on_demand() -> None:
    long_reason = "the gain is inside the noise floor; " * 12
    view = made_view([make_round(1, 8.0, 10.0, reason=long_reason.strip())])
    html = rounds_table_html(rounds_table(view))
    (row,) = re.findall(r'<tr class="zeroshot-rejected".*?</tr>', html)
    (summary,) = re.findall(r"<summary style=\"([^\"]+)\">", row)
    assert "white-space:nowrap" in summary and "text-overflow:ellipsis" in summary
    assert row.count(long_reason.strip()) == 2  # the one-line summary and the details
    assert "verdict <b>accepted</b> · 1 review pass<" in row
    assert "table-layout:fixed" in html and "min-width:22em" in html  # a wide reason
    assert "overflow-wrap:break-word" in html and "…" not in html  # wrapped, never cut


@pytest.mark.slow  # a real research run (the view fixture)
def test_rounds_table_rows_and_html(view: ResearchView) -> None:
    rows = rounds_table(view)
    assert [r.round for r in rows] == [1, 2]
    for row, round_view in zip(rows, view.rounds, strict=True):
        assert len(row.proposals) == 3
        assert (row.parent, row.candidate, row.metric) == (
            round_view.parent_id,
            round_view.candidate_id,
            round_view.metric,
        )
        assert (row.disposition, row.verdict, row.passes) == (
            round_view.disposition,
            round_view.verdict,
            round_view.passes,
        )
        assert row.reason == round_view.reason and row.reason
    html = rounds_table_html(rows, newest_first=True)
    assert html.count("<tr class=") == 2
    assert html.index(rows[1].candidate) < html.index(f"→ {rows[0].candidate}")


def test_table_html_escapes_and_marks_outcomes() -> None:
    html = rounds_table_html(rounds_table(HAND_MADE))  # newest first, as the monitor
    assert "&lt;b&gt;not&lt;/b&gt; better" in html and "<b>not</b>" not in html
    outcomes = re.findall(r'<tr class="zeroshot-(\w+)"', html)
    assert outcomes == ["rejected", "adopted", "rejected", "crashed", "rejected", "adopted"]
    oldest_first = rounds_table_html(rounds_table(HAND_MADE), newest_first=False)
    assert re.findall(r'<tr class="zeroshot-(\w+)"', oldest_first) == outcomes[::-1]
    assert "crashed</td>" in html  # a crashed round shows its status for a metric
    assert ">adopted</td>" in html and ">kept the incumbent</td>" in html  # words, not codes
    again = dataclasses.replace(make_round(7, 9.0, 9.0), candidate_id="c000")
    remeasured = rounds_table_html(rounds_table(made_view([again])))
    assert ">re-measured</td>" in remeasured and "kept the incumbent" not in remeasured


def remeasure_round(number: int, candidate: str, metric: float) -> RoundView:
    """A round that measured the incumbent ``candidate`` again, as the challenge scout asks."""
    return dataclasses.replace(
        make_round(number, metric, metric),
        parent_id=candidate,
        candidate_id=candidate,
        incumbent_id=candidate,
        strategy="challenge",
        approach=REMEASURE,
        params={},
    )


def test_a_remeasurement_of_the_incumbent_reads_in_plain_words_everywhere() -> None:
    """``challenge:remeasure c046 → c046`` marked as a rejection read as jargon: the rounds
    table, the incumbent card, the plateau chart and ``research show``'s line say that the
    incumbent was re-measured, and none marks it as a rejection."""
    again = remeasure_round(7, "c046", 9.0)
    view = made_view([make_round(6, 9.0, 10.0, adopt=True), again])
    html = rounds_table_html(rounds_table(view))
    assert "challenge:remeasure" not in html
    assert ">re-measured the incumbent c046</td>" in html
    assert re.findall(r'<tr class="zeroshot-(\w+)"', html) == ["remeasured", "adopted"]
    assert ">kept the incumbent" not in html
    card = incumbent_card_html(view)
    assert "rejections 0 · re-measurements 1" in card
    figure = plateau_figure(view)
    assert marks(figure, "rejected") == 0 and marks(figure, "re-measured (the incumbent)") == 1
    line = round_line(again)
    assert "re-measured" in line and "re-measured the incumbent c046" in line
    assert "challenge:remeasure" not in line and "kept incumbent" not in line
    # a reconsidered round says what it did, not the word "reconsidered"
    rethought = dataclasses.replace(make_round(8, 9.5, 9.0, reconsidered=True), parent_id="c003")
    assert "reconsidered" not in round_line(rethought)
    assert "a different approach, from c003" in round_line(rethought)
    assert "a different approach, from c003" in rounds_table_html(
        rounds_table(made_view([rethought]))
    )
    failed = make_round(9, None, 9.0, status="no_metric")
    assert "no metric" in round_line(failed) and "no_metric" not in round_line(failed)


@pytest.mark.slow  # a real research run (the view fixture)
def test_incumbent_card(view: ResearchView) -> None:
    card = incumbent_card_html(view, metric="rosenbrock")
    assert view.incumbent is not None
    assert view.incumbent.candidate_id in card and "rosenbrock" in card
    assert "run succeeded" in card
    assert "no reviewed rounds yet" in incumbent_card_html(research_view([]))
    assert "adopted in round 5" in incumbent_card_html(HAND_MADE)
    assert "1 round without an adoption since round 5" in incumbent_card_html(HAND_MADE)
    assert "reconsider" not in incumbent_card_html(HAND_MADE)
    assert "different approaches 1" in incumbent_card_html(HAND_MADE)
    one_rejected = made_view([make_round(1, 12.0, 10.0)])
    assert "1 round without an adoption since the start" in incumbent_card_html(one_rejected)


def test_panels_redraw_only_what_changed() -> None:
    first = made_view(list(HAND_MADE.rounds[:3]))
    chart, table, card = PlateauChart(), RoundsTable(max_rows=4), IncumbentCard()
    assert chart.update(first) and table.update(first) and card.update(first)
    assert not chart.update(first) and not table.update(first) and not card.update(first)
    assert table.value.count("<tr class=") == 3 and "newest" not in table.value
    assert chart.update(HAND_MADE) and table.update(HAND_MADE)
    assert [r.round for r in table.rows] == [1, 2, 3, 4, 5, 6]
    assert table.value.count("<tr class=") == 4 and "newest 4 of 6 rounds" in table.value
    assert bytes(chart.value)[:8] == PNG_SIGNATURE


@pytest.mark.slow  # a real research run, then the report
def test_report_html_is_standalone_with_the_chart_embedded() -> None:
    done = finished_run()
    page = report_html(done.client.url, done.run.id)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    (encoded,) = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert png_size(base64.b64decode(encoded)) == (800, 400)
    assert done.run.id in page and "zeroshot-incumbent" in page
    report = build_report(done.client, done.run.id)
    assert report.title.startswith(f"auto-research rosenbrock ({done.run.id}")
    assert report.view == load_research_view(done.client.ledger, done.run.id)


@pytest.mark.slow  # the full report, charts and tables drawn
def test_show_report_displays_chart_card_and_table() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    done = finished_run()
    with capture_output() as captured:
        show_report(done.client, done.run.id)
    kinds = [sorted(output.data) for output in captured.outputs]
    assert ["image/png", "text/plain"] in kinds
    html = "".join(o.data.get("text/html", "") for o in captured.outputs)
    assert "zeroshot-rounds" in html and "zeroshot-incumbent" in html


def inside(figure: object) -> None:
    """Every marker lies inside the plot: data marks within the y limits, marks placed in
    axes coordinates (crashed rounds) within [0, 1]."""
    axes = figure.axes[0]  # type: ignore[attr-defined]
    low, high = axes.get_ylim()
    for collection in axes.collections:
        if not isinstance(collection, PathCollection):
            continue  # the plateau bands span the height by design
        ys = [y for _, y in collection.get_offsets()]
        if collection.get_offset_transform() == axes.transData:
            assert all(low <= y <= high for y in ys), (collection.get_label(), ys, low, high)
        else:
            assert all(0.0 < y < 1.0 for y in ys), (collection.get_label(), ys)
            assert collection.get_clip_on()
    (best,) = [line for line in axes.lines if line.get_label() == "best so far"]
    assert all(low <= y <= high for y in best.get_ydata() if y == y)


def test_a_start_far_from_the_rest_is_clipped_and_written_out() -> None:
    # a start at 1000, then values around 5: before, the line lay flat along the bottom
    rounds = [make_round(1, 6.0, 1000.0, adopt=True)]
    rounds += [
        make_round(
            n,
            6.0 - n / 10 + (0.3 if n % 3 else 0.0),
            6.0 - (n - 1) / 10,
            adopt=n % 3 == 0,
            reconsidered=n % 4 == 0,
        )
        for n in range(2, 31)
    ]
    rounds.append(make_round(31, None, 3.2, status="crashed", reconsidered=True))
    figure = plateau_figure(made_view(rounds))
    axes = figure.axes[0]
    low, high = axes.get_ylim()
    assert axes.get_yscale() == "linear"
    assert low > 2.5 and high < 8.0, (low, high)  # zoomed to the best-so-far's range
    (note,) = [t for t in axes.texts if t.get_text().startswith("start: ")]
    assert note.get_text() == "start: 1000" and note.arrow_patch is not None
    assert marks(figure, "a different approach") == 8 and marks(figure, "crashed") == 1
    assert marks(figure, "beyond the top") == 0  # only the start is far: written out
    inside(figure)


def test_values_at_or_below_zero_over_orders_of_magnitude_use_symlog() -> None:
    metrics = [3.0, -0.5, -40.0, -400.0, 1.0, -350.0]
    rounds = [
        make_round(
            n,
            m,
            10.0 if n == 1 else min([10.0, *metrics[: n - 1]]),
            adopt=m < min([10.0, *metrics[: n - 1]]),
            reconsidered=n == 5,
        )
        for n, m in enumerate(metrics, start=1)
    ]
    figure = plateau_figure(made_view(rounds))
    axes = figure.axes[0]
    assert axes.get_yscale() == "symlog"
    low, high = axes.get_ylim()
    assert low < -400 and 10 < high < 100
    assert not [t for t in axes.texts if t.get_text().startswith("start: ")]
    inside(figure)


def test_every_marker_stays_inside_on_the_hand_made_and_log_charts() -> None:
    inside(plateau_figure(HAND_MADE))
    assert plateau_figure(HAND_MADE).axes[0].get_ylim()[1] > 10.0  # the start is near
    wide = made_view(
        [
            make_round(1, 0.5, 100.0, adopt=True),
            make_round(2, 0.001, 0.5, adopt=True, reconsidered=True),
            make_round(3, 50.0, 0.001),
        ]
    )
    figure = plateau_figure(wide)
    assert figure.axes[0].get_yscale() == "log"
    inside(figure)
    # a wild measurement far from the line is drawn at the edge, not widening the axis
    wild = made_view([*HAND_MADE.rounds[:5], make_round(6, 5000.0, 5.0)])
    figure = plateau_figure(wild)
    assert figure.axes[0].get_ylim()[1] < 20 and marks(figure, "rejected") == 3
    assert marks(figure, "beyond the top") == 1 and marks(figure, "beyond the bottom") == 0
    inside(figure)
