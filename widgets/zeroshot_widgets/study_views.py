"""Inside a study: parameter importance, parameter-versus-metric slices, parallel
coordinates, and a candidate view (its source, its diff against its parent, its
measurements and the review), all read from the study's records.

Figures are built from ``matplotlib.figure.Figure`` directly (never pyplot) and rendered to
PNG bytes for ``Image`` widgets, as the plateau chart is. The widgets read the records when
made and on ``refresh()``; they start no threads.

Example::

    from zeroshot_widgets.study_views import CandidateView, StudyInsights

    StudyInsights(".", study="branin")               # tabs: importance, slices, ...
    CandidateView(client, study="branin", round=2)   # the candidate round 2 made
"""

from __future__ import annotations

import html
import io
import math
import os
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
from matplotlib import colormaps
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, MaxNLocator

from zeroshot_kernel.auto_research.agents.space import from_unit, to_unit
from zeroshot_kernel.auto_research.candidate_detail import (
    CandidateDetail,
    CandidateNotFound,
    candidate_choices,
    candidate_detail,
    candidate_for_round,
)
from zeroshot_kernel.auto_research.experiment import status_words
from zeroshot_kernel.auto_research.importance import (
    Importances,
    MeasuredCandidate,
    MeasuredStudy,
    load_measured,
    parameter_importance,
)
from zeroshot_kernel.auto_research.round_words import (
    approach_words,
    decision_words,
    remeasured_words,
)
from zeroshot_kernel.auto_research.task import SearchParameter
from zeroshot_kernel.client import Client
from zeroshot_kernel.sandbox import UNCONTAINED

BAR = "#1f77b4"
INCUMBENT = "#d62728"
MUTED = "#7f7f7f"
ROUND_MAP = "viridis"
METRIC_MAP = "plasma"
TICK_PT = 9
"""The least font size of the figures' tick labels, in points."""
AXIS_TICKS = 5
"""Labelled values on each parallel-coordinates axis."""
MARGIN = 0.05
"""The slice plots' margin beyond a parameter's bounds, as a part of its range: a point at
a bound is drawn whole."""
SOURCE_HEIGHT = "360px"
"""Height of the scrolling source and diff boxes."""


# --- figures ------------------------------------------------------------------------------


def importance_figure(
    importances: Importances,
    *,
    title: str | None = None,
    size: tuple[float, float] = (6.0, 3.0),
    dpi: int = 100,
) -> Figure:
    """One horizontal bar per parameter (most important on top), labelled ``importance``
    in ``fig.axes[0]``; an empty result shows its reason instead.

    >>> importance_figure(Importances(reason="1 measured candidate(s)")).axes[0].texts[0].get_text()
    '1 measured candidate(s)'
    """
    figure = Figure(figsize=size, dpi=dpi)
    axes = figure.add_subplot()
    axes.set_title(title or _importance_title(importances), fontsize="medium", loc="left")
    if not importances:
        _empty(axes, importances.reason or "nothing to rate")
        return figure
    names = list(importances)[::-1]
    values = [importances[name] for name in names]
    axes.barh(names, values, color=BAR, label="importance")
    for y, value in enumerate(values):
        axes.text(value, y, f" {value:.2f}", va="center", fontsize="small")
    axes.set_xlim(0, max(1.0, max(values) * 1.15))
    axes.set_xlabel("importance (sums to 1)")
    figure.tight_layout()
    return figure


def slice_figure(
    measured: MeasuredStudy, *, size: tuple[float, float] | None = None, dpi: int = 100
) -> Figure:
    """One subplot per parameter: the parameter's value against the measured metric, one
    point per measured candidate coloured by the round that made it, the incumbent ringed.

    ``fig.axes[i]`` is parameter ``i``'s subplot (labelled and titled with its name); its
    collections are
    ``candidates`` and ``incumbent``; a colour bar (labelled ``round``) follows.
    """
    space = measured.search_space
    columns = max(1, min(3, len(space)))
    rows = max(1, math.ceil(len(space) / columns))
    figure = Figure(figsize=size or (3.2 * columns + 1.0, 2.8 * rows + 0.4), dpi=dpi)
    if not space or not measured.candidates:
        axes = figure.add_subplot()
        _empty(axes, _why_no_points(measured))
        return figure
    norm = Normalize(*_round_range(measured.candidates))
    colours = colormaps[ROUND_MAP]
    incumbent = measured.incumbent
    scatter = None
    for index, parameter in enumerate(space):
        axes = figure.add_subplot(rows, columns, index + 1, label=parameter.name)
        xs = [_x(parameter, c.params.get(parameter.name)) for c in measured.candidates]
        scatter = axes.scatter(
            xs,
            [c.metric for c in measured.candidates],
            c=[c.round for c in measured.candidates],
            cmap=colours,
            norm=norm,
            s=28,
            edgecolors="black",
            linewidths=0.3,
            label="candidates",
            zorder=2,
        )
        if incumbent is not None:
            axes.scatter(
                [_x(parameter, incumbent.params.get(parameter.name))],
                [incumbent.metric],
                s=140,
                facecolors="none",
                edgecolors=INCUMBENT,
                linewidths=2.0,
                label="incumbent",
                zorder=3,
            )
        _parameter_axis(axes, parameter)
        axes.tick_params(labelsize=TICK_PT)
        axes.margins(y=2 * MARGIN)  # the ringed incumbent at the lowest value too
        axes.set_title(parameter.name, fontsize="medium")
        if index % columns == 0:
            axes.set_ylabel(measured.metric)
        if _log_scale([c.metric for c in measured.candidates]):
            axes.set_yscale("log")
    assert scatter is not None
    figure.tight_layout(rect=(0, 0.04, 0.9, 1))
    if incumbent is not None:
        figure.text(
            0.01,
            0.01,
            f"ringed: the incumbent {incumbent.candidate_id}",
            fontsize="small",
            color=INCUMBENT,
        )
    bar_axes = figure.add_axes((0.92, 0.15, 0.015, 0.7), label="round")
    bar = figure.colorbar(scatter, cax=bar_axes)
    bar.set_label("round")
    bar.locator = MaxNLocator(integer=True)
    bar.update_ticks()
    return figure


def parallel_figure(
    measured: MeasuredStudy, *, size: tuple[float, float] = (8.0, 3.8), dpi: int = 100
) -> Figure:
    """Parallel coordinates: one line per measured candidate across the parameters'
    normalised axes (search-space bounds at the bottom and top) and the metric's axis,
    coloured by metric; the incumbent is drawn on top.

    In ``fig.axes[0]`` the lines are one ``LineCollection`` labelled ``candidates`` and the
    incumbent a ``Line2D`` labelled ``incumbent``; a colour bar (labelled ``metric``) follows.
    """
    figure = Figure(figsize=size, dpi=dpi)
    axes = figure.add_subplot()
    space = measured.search_space
    if not space or not measured.candidates:
        _empty(axes, _why_no_points(measured))
        return figure
    metrics = [c.metric for c in measured.candidates]
    low, high = min(metrics), max(metrics)
    log = _log_scale(metrics)

    def metric_unit(value: float) -> float:
        if high == low:
            return 0.5
        if log:
            return (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
        return (value - low) / (high - low)

    def line(candidate: MeasuredCandidate) -> list[tuple[float, float]]:
        points = [(float(i), _unit(p, candidate.params.get(p.name))) for i, p in enumerate(space)]
        return [*points, (float(len(space)), metric_unit(candidate.metric))]

    norm = Normalize(low, high if high > low else low + 1.0)
    lines = LineCollection(
        [line(c) for c in measured.candidates],
        cmap=colormaps[METRIC_MAP],
        norm=norm,
        linewidths=1.2,
        alpha=0.8,
        label="candidates",
        zorder=2,
    )
    lines.set_array(metrics)
    axes.add_collection(lines)
    incumbent = measured.incumbent
    drawn = []
    if incumbent is not None:
        xs, ys = zip(*line(incumbent), strict=True)
        drawn = axes.plot(
            xs,
            ys,
            color=INCUMBENT,
            linewidth=2.6,
            marker="o",
            markersize=4,
            label="incumbent",
            zorder=4,
        )
    names = [*(p.name for p in space), measured.metric]
    for x in range(len(names)):
        axes.axvline(x, color=MUTED, linewidth=0.8, zorder=1)
    for x, parameter in enumerate(space):
        for unit, label in _axis_ticks(parameter):
            _tick(axes, x, unit, label)
    for unit, label in _metric_ticks(low, high, log):
        _tick(axes, len(space), unit, label)
    axes.set_xticks(range(len(names)), names, fontsize=TICK_PT)
    axes.set_yticks([])
    axes.set_xlim(-0.45, len(names) - 0.85)
    axes.set_ylim(-0.06, 1.06)  # points at a bound (0 or 1) show whole
    for side in ("left", "right", "top"):
        axes.spines[side].set_visible(False)
    marked = f" · incumbent {incumbent.candidate_id} in red" if drawn and incumbent else ""
    axes.set_title(
        f"{len(measured.candidates)} measured candidates · {measured.direction} "
        f"{measured.metric}{marked}",
        fontsize="medium",
        loc="left",
        pad=14,
    )
    bar = figure.colorbar(lines, ax=axes, fraction=0.04, pad=0.02)
    bar.ax.set_label("metric")
    bar.set_label(measured.metric)
    return figure


def _tick(axes: Any, x: float, unit: float, label: str) -> None:
    """A labelled tick on a parallel axis: a short mark and its value to its left."""
    axes.plot([x - 0.02, x], [unit, unit], color=MUTED, linewidth=0.8, zorder=1)
    axes.text(
        x - 0.03, unit, label, ha="right", va="center", fontsize=TICK_PT, color="#444", gid="tick"
    )


def _axis_ticks(parameter: SearchParameter) -> list[tuple[float, str]]:
    """Where a parameter's axis is labelled: every choice of a categorical parameter (at
    most ``AXIS_TICKS``, evenly), else ``AXIS_TICKS`` values from bound to bound."""
    if parameter.type == "categorical":
        choices = parameter.choices or [""]
        if len(choices) == 1:
            return [(0.5, str(choices[0]))]
        step = max(1, math.ceil((len(choices) - 1) / (AXIS_TICKS - 1)))
        shown = sorted({*range(0, len(choices), step), len(choices) - 1})
        return [(i / (len(choices) - 1), str(choices[i])) for i in shown]
    units = [i / (AXIS_TICKS - 1) for i in range(AXIS_TICKS)]
    return [(u, f"{from_unit(parameter, u):.3g}") for u in units]


def _metric_ticks(low: float, high: float, log: bool) -> list[tuple[float, str]]:
    """``AXIS_TICKS`` labelled values on the metric's axis, from its lowest to its highest."""
    if high == low:
        return [(0.5, f"{low:.4g}")]
    ticks = []
    for index in range(AXIS_TICKS):
        unit = index / (AXIS_TICKS - 1)
        value = (
            math.exp(math.log(low) + unit * (math.log(high) - math.log(low)))
            if log
            else (low + unit * (high - low))
        )
        ticks.append((unit, f"{value:.4g}"))
    return ticks


def figure_png(figure: Figure) -> bytes:
    """A figure as PNG bytes (Agg, through the figure's own canvas)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def importance_png(importances: Importances, **options: Any) -> bytes:
    return figure_png(importance_figure(importances, **options))


def slice_png(measured: MeasuredStudy, **options: Any) -> bytes:
    return figure_png(slice_figure(measured, **options))


def parallel_png(measured: MeasuredStudy, **options: Any) -> bytes:
    return figure_png(parallel_figure(measured, **options))


def _importance_title(importances: Importances) -> str:
    if not importances:
        return "parameter importance"
    name = importances.evaluator.replace("ImportanceEvaluator", "") or "optuna"
    return f"parameter importance ({name}, {importances.measured} measured candidates)"


def _empty(axes: Any, text: str) -> None:
    axes.text(
        0.5, 0.5, text, ha="center", va="center", wrap=True, color=MUTED, transform=axes.transAxes
    )
    axes.set_xticks([])
    axes.set_yticks([])


def _why_no_points(measured: MeasuredStudy) -> str:
    if measured.problem:
        return measured.problem
    if not measured.search_space:
        return "no parameters to plot: the task has no searchSpace"
    return "no measured candidates yet"


def _round_range(candidates: Sequence[MeasuredCandidate]) -> tuple[float, float]:
    rounds = [c.round for c in candidates]
    low, high = min(rounds), max(rounds)
    return (low, high) if high > low else (low - 0.5, high + 0.5)


def _x(parameter: SearchParameter, value: Any) -> float:
    """Where a value sits on its parameter's x axis (categories at 0, 1, 2, ...)."""
    if parameter.type == "categorical":
        choices = parameter.choices or []
        return float(
            next((i for i, c in enumerate(choices) if c == value and type(c) is type(value)), -1)
        )
    return float(value) if isinstance(value, int | float) else math.nan


def _unit(parameter: SearchParameter, value: Any) -> float:
    """A value on its parameter's normalised axis, [0, 1]."""
    if parameter.type == "categorical":
        count = len(parameter.choices or [])
        position = _x(parameter, value)
        return 0.5 if count <= 1 or position < 0 else position / (count - 1)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return math.nan
    return to_unit(parameter, value)


def _bounds_labels(parameter: SearchParameter) -> tuple[str, str]:
    if parameter.type == "categorical":
        choices = parameter.choices or [""]
        return str(choices[0]), str(choices[-1])
    return f"{parameter.low:g}", f"{parameter.high:g}"


def _parameter_axis(axes: Any, parameter: SearchParameter) -> None:
    if parameter.type == "categorical":
        choices = parameter.choices or []
        axes.set_xticks(range(len(choices)), [str(c) for c in choices])
        axes.set_xlim(-0.5, len(choices) - 0.5)
        return
    assert parameter.low is not None and parameter.high is not None
    if parameter.log:
        axes.set_xscale("log")
        ratio = (parameter.high / parameter.low) ** MARGIN
        axes.set_xlim(parameter.low / ratio, parameter.high * ratio)
    else:
        span = (parameter.high - parameter.low) * MARGIN
        axes.set_xlim(parameter.low - span, parameter.high + span)
    axes.xaxis.set_major_locator(
        LogLocator(numticks=6) if parameter.log else MaxNLocator(nbins=5, min_n_ticks=4)
    )


def _log_scale(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) / min(values) > 100.0


# --- widgets ------------------------------------------------------------------------------


def _workspace(source: Client | str | os.PathLike[str] | None) -> tuple[str, Client | None]:
    if isinstance(source, Client):
        return str(source.workspace), source
    if source is None:
        client = Client()
        return str(client.workspace), client
    return os.fspath(source), None


def _full_width() -> widgets.Layout:
    """As wide as the view and no wider, so the HTML inside wraps at its edge."""
    return widgets.Layout(width="100%", max_width="100%", overflow="hidden")


class CandidateView(widgets.VBox):  # type: ignore[misc]
    """One candidate of a study: pick it by round in the dropdown and read its source,
    its change against its parent, its measurements and the review.

    ``source`` is a :class:`~zeroshot_kernel.client.Client` (the reviewer's verdict and
    reason then come from its ledger too) or a workspace folder (records only).
    """

    def __init__(
        self,
        source: Client | str | os.PathLike[str] | None = None,
        *,
        study: str,
        round: int | None = None,
        candidate: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.workspace, self.client = _workspace(source)
        self.study = study
        self.detail: CandidateDetail | None = None
        self.picker = widgets.Dropdown(
            description="candidate", layout=widgets.Layout(width="480px")
        )
        self.header = widgets.HTML(layout=_full_width())
        self.source_html = widgets.HTML(layout=_full_width())
        self.diff_html = widgets.HTML(layout=_full_width())
        self.measurements_html = widgets.HTML(layout=_full_width())
        self.review_html = widgets.HTML(layout=_full_width())
        self.message = widgets.HTML(layout=_full_width())
        self.sections = widgets.Tab(
            children=[self.source_html, self.diff_html, self.measurements_html, self.review_html]
        )
        for index, title in enumerate(("Source", "Diff", "Measurements", "Review")):
            self.sections.set_title(index, title)
        self.picker.observe(self._picked, names="value")
        super().__init__(children=[self.picker, self.message, self.header, self.sections], **kwargs)
        self.refresh()
        if round is not None:
            self.select_round(round)
        elif candidate is not None:
            self.select(candidate)

    def refresh(self) -> None:
        """Re-read the study's candidates (keeps the selection when it still exists)."""
        selected = self.picker.value
        choices = candidate_choices(self.workspace, self.study)
        self.picker.options = [(c.label, c.candidate_id) for c in choices]
        ids = [c.candidate_id for c in choices]
        if not ids:
            self.message.value = f"study <b>{html.escape(self.study)}</b> has no candidates yet"
            return
        target = selected if selected in ids else ids[-1]
        if self.picker.value == target:
            self._show(target)
        else:
            self.picker.value = target

    def select(self, candidate: str) -> None:
        """Show ``candidate`` (its id, e.g. ``c002``)."""
        if candidate not in [value for _, value in self.picker.options]:
            self._show_nothing(
                f"study <b>{html.escape(self.study)}</b> has no candidate "
                f"<code>{html.escape(candidate)}</code>"
            )
            return
        self.picker.value = candidate

    def select_round(self, round_number: int) -> None:
        """Show the candidate ``round_number`` made."""
        try:
            candidate = candidate_for_round(self.workspace, self.study, round_number)
        except CandidateNotFound as missing:
            self._show_nothing(html.escape(str(missing)))
            return
        self.message.value = ""
        self.select(candidate)
        shown = self.detail
        if shown is not None and shown.candidate_id == candidate and shown.round != round_number:
            # the round measured an earlier candidate: the incumbent, again
            self.message.value = html.escape(
                f"round {round_number} {remeasured_words(candidate)}: it made no new "
                f"candidate, so {candidate} (made in round {shown.round}) is shown"
            )

    def _picked(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._show(change["new"])

    def _show_nothing(self, message: str) -> None:
        """Say ``message`` (HTML) with no candidate selected: what was asked for does not
        exist, and another candidate's source under it would read as its answer."""
        self.picker.value = None
        self.detail = None
        for part in (self.header, self.source_html, self.diff_html):
            part.value = ""
        self.measurements_html.value = self.review_html.value = ""
        self.message.value = message

    def _show(self, candidate: str) -> None:
        try:
            detail = candidate_detail(self.workspace, self.study, candidate, client=self.client)
        except (CandidateNotFound, OSError, ValueError) as failed:
            self.message.value = html.escape(str(failed))
            return
        self.detail = detail
        self.message.value = ""
        self.header.value = header_html(detail)
        self.source_html.value = source_html(detail)
        self.diff_html.value = diff_html(detail.diff)
        self.measurements_html.value = measurements_html(detail)
        self.review_html.value = review_html(detail)


class StudyInsights(widgets.VBox):  # type: ignore[misc]
    """A study's importance, slice plots, parallel coordinates and candidates, in tabs."""

    def __init__(
        self,
        source: Client | str | os.PathLike[str] | None = None,
        *,
        study: str,
        evaluator: str = "ped-anova",
        **kwargs: Any,
    ) -> None:
        self.workspace, self.client = _workspace(source)
        self.study = study
        self.evaluator = evaluator
        self.measured: MeasuredStudy | None = None
        self.importances: Importances | None = None
        self.importance_image = widgets.Image(
            format="png", layout=widgets.Layout(max_width="640px")
        )
        self.importance_note = widgets.HTML()
        self.slice_image = widgets.Image(format="png", layout=widgets.Layout(max_width="900px"))
        self.parallel_image = widgets.Image(format="png", layout=widgets.Layout(max_width="820px"))
        self.candidates = CandidateView(self.client or self.workspace, study=study)
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.tabs = widgets.Tab(
            children=[
                widgets.VBox([self.importance_image, self.importance_note]),
                self.slice_image,
                self.parallel_image,
                self.candidates,
            ]
        )
        for index, title in enumerate(
            ("Importance", "Slices", "Parallel coordinates", "Candidates")
        ):
            self.tabs.set_title(index, title)
        super().__init__(
            children=[
                widgets.HTML(f"study <b>{html.escape(study)}</b>"),
                self.refresh_button,
                self.tabs,
            ],
            **kwargs,
        )
        self.refresh()

    def refresh(self) -> None:
        """Re-read the study's records and redraw (call from the main thread)."""
        self.measured = load_measured(self.workspace, self.study)
        self.importances = parameter_importance(self.measured, evaluator=self.evaluator)  # type: ignore[arg-type]
        self.importance_image.value = importance_png(self.importances)
        self.importance_note.value = importance_html(self.importances)
        self.slice_image.value = slice_png(self.measured)
        self.parallel_image.value = parallel_png(self.measured)
        self.candidates.refresh()


# --- HTML ---------------------------------------------------------------------------------

_BOX = (
    f"max-height:{SOURCE_HEIGHT};overflow:auto;margin:0;padding:6px;"
    "border:1px solid #ddd;background:#fafafa;font-family:monospace;font-size:12px;"
    "white-space:pre;line-height:1.35"
)


_WRAPPED_BOX = _BOX.replace("white-space:pre", "white-space:pre-wrap;overflow-wrap:anywhere")
"""The source box's look for text that must wrap at the view's edge (the evidence)."""
_REVIEW_TABLE = "width:100%;max-width:100%;table-layout:fixed;border-collapse:collapse"
_REVIEW_HEAD = "text-align:left;vertical-align:top;width:8em;white-space:nowrap;padding-right:8px"
_REVIEW_CELL = (
    "text-align:left;vertical-align:top;white-space:normal;overflow-wrap:anywhere;"
    "word-break:break-word;line-height:1.4"
)
"""The review's cells wrap at the view's edge: a long reason or rationale never runs off it."""


def importance_html(importances: Importances) -> str:
    if not importances:
        return f"<i>{html.escape(importances.reason)}</i>"
    rows = "".join(
        f"<tr><td><code>{html.escape(k)}</code></td><td>{v:.3f}</td></tr>"
        for k, v in importances.items()
    )
    note = f"<div><i>{html.escape(importances.note)}</i></div>" if importances.note else ""
    return f"<table>{rows}</table>{note}"


def header_html(detail: CandidateDetail) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in detail.params.items()) or "no parameters"
    parent = detail.parent_id or "none (the task's starting candidate)"
    state = (
        "verified against its manifest"
        if detail.verified
        else (
            "<b style='color:#d62728'>does not match its manifest</b>: "
            + html.escape("; ".join(detail.problems[:3]))
        )
    )
    incumbent = " · <b>incumbent</b>" if detail.incumbent else ""
    marks = "".join(
        f" · <b>{html.escape(mark)}</b>"
        for mark, shown in (("self-scored", detail.self_scored), (UNCONTAINED, detail.uncontained))
        if shown
    )
    return (
        f"<b>{html.escape(detail.candidate_id)}</b> · round {detail.round} · parent "
        f"{html.escape(parent)}{incumbent}{marks}<br><span style='{_REVIEW_CELL}'>"
        f"{html.escape(params)}</span><br>"
        f"<small>content sha256 {detail.content_sha256[:12]}… · {state}</small>"
    )


def source_html(detail: CandidateDetail) -> str:
    if not detail.verified:
        return (
            "<i>the recorded bytes do not match the manifest, so they are not shown: "
            + html.escape("; ".join(detail.problems[:5]))
            + "</i>"
        )
    parts = []
    for file in detail.files:
        title = f"<b><code>{html.escape(file.path)}</code></b> <small>{file.size} bytes</small>"
        if not file.shown:
            parts.append(f"<div>{title} <i>not shown: the view's size limit was reached</i></div>")
        elif file.binary:
            parts.append(f"<div>{title} <i>binary</i></div>")
        else:
            more = " <i>(cut: longer than the view shows)</i>" if file.truncated else ""
            parts.append(
                f'<div>{title}{more}</div><pre style="{_BOX}">{html.escape(file.text)}</pre>'
            )
    return "".join(parts) or "<i>no files</i>"


def diff_html(diff: str) -> str:
    if not diff:
        return "<i>no change: the task's starting candidate</i>"
    lines = []
    for line in diff.splitlines():
        escaped = html.escape(line)
        if line.startswith(("+++", "---")):
            lines.append(f"<b>{escaped}</b>")
        elif line.startswith("+"):
            lines.append(f"<span style='background:#e6ffec'>{escaped}</span>")
        elif line.startswith("-"):
            lines.append(f"<span style='background:#ffebe9'>{escaped}</span>")
        elif line.startswith("@@"):
            lines.append(f"<span style='color:#6f42c1'>{escaped}</span>")
        else:
            lines.append(escaped)
    return f'<pre style="{_BOX}">' + "\n".join(lines) + "</pre>"


def measurements_html(detail: CandidateDetail) -> str:
    rows = "".join(
        f"<tr><td>{m.seed}</td><td>{_number(m.value)}</td>"
        f"<td title='{html.escape(m.pruned, quote=True)}'>{html.escape(status_words(m.status))}"
        f"{html.escape(_pruned_at(m.pruned))}</td>"
        f"<td>{m.round}</td><td>{m.duration_s:.2f}s</td>"
        f"<td>{'box' if m.contained else UNCONTAINED}</td></tr>"
        for m in detail.measurements
    )
    summary = f"mean {_number(detail.mean)} · std {_number(detail.std)} · n {detail.n}"
    decision = ""
    if detail.review is not None:
        decision = f"<div>{html.escape(detail.review.noise_decision)}</div>"
    return (
        f"<div>{summary}</div>{decision}<table><tr><th>seed</th><th>value</th>"
        f"<th>status</th><th>round</th><th>time</th><th>ran</th></tr>{rows}</table>"
    )


def _pruned_at(described: str) -> str:
    """`` at step 12 (value 0.83)`` of a pruned run's description, else ``""``."""
    head = described.split(":", 1)[0]
    return head.removeprefix("pruned") if head.startswith("pruned at step") else ""


def review_html(detail: CandidateDetail) -> str:
    review = detail.review
    if review is None:
        return "<i>the task's starting candidate: measured as the baseline, not reviewed</i>"
    verdict = (
        f"{html.escape(review.verdict)}: {html.escape(review.reason)}"
        if review.verdict
        else "<i>not in this ledger (records only)</i>"
    )
    corrections = "".join(f"<li>{html.escape(c)}</li>" for c in review.corrections)
    change = approach_words(review.approach, detail.candidate_id, detail.parent_id)
    rows = [
        (
            "decision",
            html.escape(
                decision_words(
                    review.decision, detail.candidate_id, detail.parent_id, review.approach
                )
            ),
        ),
        ("why", html.escape(review.justification)),
        ("reviewer", verdict),
        ("corrections", f"<ol>{corrections}</ol>" if corrections else "none"),
        ("passes", str(review.passes)),
        ("change", html.escape(f"{change} ({review.strategy})")),
        ("rationale", html.escape(review.rationale)),
        ("noise floor", html.escape(review.noise_decision)),
        ("effect size", _number(review.effect_size)),
        ("evidence", f'<pre style="{_WRAPPED_BOX}">{html.escape(review.evidence)}</pre>'),
    ]
    body = "".join(
        f"<tr><th style='{_REVIEW_HEAD}'>{k}</th><td style='{_REVIEW_CELL}'>{v}</td></tr>"
        for k, v in rows
    )
    return f'<table class="zeroshot-review" style="{_REVIEW_TABLE}">{body}</table>'


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"
