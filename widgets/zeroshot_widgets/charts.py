"""The plateau chart of an auto-research run, drawn with matplotlib's Agg canvas.

Figures are built from ``matplotlib.figure.Figure`` directly, never through pyplot, so
drawing holds no global state: a poller thread, a report notebook and a benchmark can
render at the same time. Each kind of mark is one artist (one scatter, one collection),
so a run of 1,000 rounds costs about what a run of ten does.

Example::

    from zeroshot_kernel.auto_research.views import load_research_view
    from zeroshot_widgets.charts import plateau_png

    png = plateau_png(load_research_view(client, run_id))
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from zeroshot_kernel.auto_research.round_words import RECONSIDERED as RECONSIDERED_WORDS
from zeroshot_kernel.auto_research.round_words import is_remeasure
from zeroshot_kernel.auto_research.views import ResearchView, RoundView

ADOPTED = "#2ca02c"
REJECTED = "#7f7f7f"
CRASHED = "#d62728"
BEST = "#1f77b4"
RECONSIDERED = "#ff7f0e"
PLATEAU = "#ffbb78"
BEYOND = "#3f3f3f"
MIN_PLATEAU = 2
"""Consecutive non-adopting rounds that count as a plateau (the researcher reconsiders its
approach after two accepted non-adoptions)."""
LOG_RATIO = 100.0
"""Metrics spanning more than this factor are drawn on a log scale (all positive) or a
symmetric log scale (some at or below zero)."""
NEAR_SPANS = 3.0
"""Measured values and the start count as near the best-so-far line (and widen the axis)
within this many of its spans (or of its magnitude, when larger) beyond it; the axis does
not widen for values further away, which are drawn at its edge with an arrow mark."""
NEAR_FACTOR = 4.0
"""The same on a log axis: within this factor of the best-so-far line."""
CRASHED_Y = 0.05
"""Where crashed rounds (no value to place) sit, in axes coordinates: inside the plot."""


def crashed(round_view: RoundView) -> bool:
    """The experiment produced no usable metric (crashed, timed out, printed none)."""
    return round_view.metric is None or round_view.experiment_status not in ("", "ok")


def _remeasure(round_view: RoundView) -> bool:
    """The round measured the incumbent again: neither an adoption nor a rejection."""
    return is_remeasure(round_view.approach, round_view.candidate_id, round_view.parent_id)


def plateau_stretches(view: ResearchView, min_length: int = MIN_PLATEAU) -> list[tuple[int, int]]:
    """Maximal runs of consecutive rounds that adopted nothing, as (first, last) rounds.

    >>> from zeroshot_kernel.auto_research.views import research_view
    >>> plateau_stretches(research_view([]))
    []
    """
    stretches: list[tuple[int, int]] = []
    start: int | None = None
    previous = 0
    for round_view in view.rounds:
        if round_view.adopted:
            if start is not None and previous - start + 1 >= min_length:
                stretches.append((start, previous))
            start = None
        elif start is None:
            start = round_view.round
        previous = round_view.round
    if start is not None and previous - start + 1 >= min_length:
        stretches.append((start, previous))
    return stretches


def plateau_figure(
    view: ResearchView,
    *,
    metric: str = "metric",
    title: str | None = None,
    size: tuple[float, float] = (8.0, 4.0),
    dpi: int = 100,
) -> Figure:
    """Metric per round, the best-so-far step line, adoptions against rejections, crashed
    rounds, plateau stretches and reconsideration points.

    Every mark carries a label (``adopted``, ``rejected``, ``re-measured (the incumbent)``,
    ``crashed``, ``best so far``, ``a different approach``, ``plateau``) so a reader, or a test, can
    find it in ``fig.axes[0]``.

    Example::

        fig = plateau_figure(view, metric="val_error", title="svc-digits")
        fig.savefig("plateau.svg")
    """
    figure = Figure(figsize=size, dpi=dpi)
    axes = figure.add_subplot()
    figure.subplots_adjust(left=0.1, right=0.78, top=0.9, bottom=0.13)
    axes.set_xlabel("round")
    axes.set_ylabel(metric)
    axes.set_title(title or _summary(view), fontsize="medium", loc="left")
    if not view.rounds:
        axes.text(
            0.5,
            0.5,
            "no reviewed rounds yet",
            ha="center",
            va="center",
            transform=axes.transAxes,
            color=REJECTED,
        )
        axes.set_xlim(0, 1)
        return figure

    rounds = view.rounds
    adopted = _points(r for r in rounds if r.adopted)
    rejected = _points(r for r in rounds if not r.adopted and not _remeasure(r))
    remeasured = _points(r for r in rounds if not r.adopted and _remeasure(r))
    start = rounds[0].incumbent_metric
    area = min(1.0, max(0.3, 60 / len(rounds)))  # smaller marks once rounds crowd the axis
    first = rounds[0].round - 1  # a run continuing a study starts after its rounds
    best_x = [first, *(r.round for r in rounds)]
    best_y = [start, *view.best_so_far]
    after = [v for v in view.best_so_far if v is not None]
    zoom = y_range([*adopted[1], *rejected[1], *remeasured[1]], after, start)
    _plateau_bands(axes, plateau_stretches(view))
    axes.step(
        best_x,
        [zoom.clamp(_nan(v)) for v in best_y],
        where="post",
        color=BEST,
        linewidth=1.6,
        label="best so far",
        zorder=2,
    )
    if start is not None:
        axes.scatter(
            [first], [zoom.clamp(start)], marker="D", s=30, color=BEST, label="start", zorder=3
        )
    if rejected[0]:
        axes.scatter(
            rejected[0],
            [zoom.clamp(v) for v in rejected[1]],
            s=24 * area,
            facecolors="none",
            edgecolors=REJECTED,
            label="rejected",
            zorder=3,
        )
    if remeasured[0]:
        axes.scatter(
            remeasured[0],
            [zoom.clamp(v) for v in remeasured[1]],
            s=30 * area,
            marker="s",
            facecolors="none",
            edgecolors=BEST,
            label="re-measured (the incumbent)",
            zorder=3,
        )
    if adopted[0]:
        axes.scatter(
            adopted[0],
            [zoom.clamp(v) for v in adopted[1]],
            s=40 * area,
            color=ADOPTED,
            edgecolors="black",
            linewidths=0.5,
            label="adopted",
            zorder=4,
        )
    _edge_marks(axes, [r.round for r in rounds if crashed(r)], CRASHED_Y, "X", CRASHED, "crashed")
    _reconsidered_marks(axes, view, zoom)
    _beyond_marks(
        axes,
        [
            *zip(*adopted, strict=True),
            *zip(*rejected, strict=True),
            *zip(*remeasured, strict=True),
        ],
        zoom,
    )
    zoom.apply(axes)
    if zoom.clipped_start and start is not None:
        _start_note(axes, first, start, zoom)
    axes.set_xlim(first - 0.5, rounds[-1].round + 0.5)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure


def plateau_png(
    view: ResearchView,
    *,
    metric: str = "metric",
    title: str | None = None,
    size: tuple[float, float] = (8.0, 4.0),
    dpi: int = 100,
) -> bytes:
    """:func:`plateau_figure` rendered to PNG bytes (for an ``Image`` widget or a report).

    >>> from zeroshot_kernel.auto_research.views import research_view
    >>> plateau_png(research_view([]))[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    figure = plateau_figure(view, metric=metric, title=title, size=size, dpi=dpi)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")  # Agg, through the figure's own canvas
    return buffer.getvalue()


def _summary(view: ResearchView) -> str:
    if view.incumbent is None:
        return "auto-research"
    metric = "-" if view.incumbent.metric is None else f"{view.incumbent.metric:.4g}"
    return (
        f"{len(view.rounds)} rounds · incumbent {view.incumbent.candidate_id} = {metric}"
        f" · {view.plateau} without an adoption"
    )


def _plateau_bands(axes: Axes, stretches: Sequence[tuple[int, int]]) -> None:
    """One collection of full-height bands, in data x and axes y coordinates."""
    if not stretches:
        return
    bands = [[(a - 0.5, 0.0), (b + 0.5, 0.0), (b + 0.5, 1.0), (a - 0.5, 1.0)] for a, b in stretches]
    collection = PolyCollection(
        bands,
        facecolors=PLATEAU,
        edgecolors="none",
        alpha=0.35,
        transform=axes.get_xaxis_transform(),
        label="plateau",
        zorder=1,
    )
    axes.add_collection(collection, autolim=False)


def _edge_marks(
    axes: Axes, xs: Sequence[int], y: float, marker: str, color: str, label: str
) -> None:
    """Marks near the bottom edge, inside the plot: rounds with no metric value to place."""
    if not xs:
        return
    axes.scatter(
        xs,
        [y] * len(xs),
        marker=marker,
        s=46,
        color=color,
        label=label,
        transform=axes.get_xaxis_transform(),
        zorder=5,
    )


def _reconsidered_marks(axes: Axes, view: ResearchView, zoom: YRange) -> None:
    """Reconsiderations sit on the best-so-far line at their round (inside the axis)."""
    best = {r.round: v for r, v in zip(view.rounds, view.best_so_far, strict=True)}
    marks = [(x, best.get(x)) for x in view.reconsiderations]
    placed = [(x, zoom.clamp(y)) for x, y in marks if y is not None and not math.isnan(y)]
    if not placed:
        if marks:  # no value yet: near the top, inside the plot
            _edge_marks(
                axes, [x for x, _ in marks], 1 - CRASHED_Y, "v", RECONSIDERED, RECONSIDERED_WORDS
            )
        return
    axes.scatter(
        [x for x, _ in placed],
        [y for _, y in placed],
        marker="v",
        s=46,
        color=RECONSIDERED,
        label=RECONSIDERED_WORDS,
        zorder=5,
    )


def _beyond_marks(axes: Axes, points: Sequence[tuple[int, float]], zoom: YRange) -> None:
    """An arrow over each measured value drawn at the edge because it lies beyond the
    axis (up above the top, down below the bottom), so no clipped value passes for one."""
    for label, marker, beyond in (
        ("beyond the top", "^", [(x, y) for x, y in points if y > zoom.high]),
        ("beyond the bottom", "v", [(x, y) for x, y in points if y < zoom.low]),
    ):
        if beyond:
            axes.scatter(
                [x for x, _ in beyond],
                [zoom.clamp(y) for _, y in beyond],
                marker=marker,
                s=22,
                color=BEYOND,
                label=label,
                zorder=6,
            )


def _start_note(axes: Axes, x: int, start: float, zoom: YRange) -> None:
    """The clipped start value, written out, with an arrow to the edge it is beyond."""
    top = start > zoom.high
    axes.annotate(
        f"start: {start:.4g}",
        xy=(x, zoom.clamp(start)),
        xytext=(34, -16 if top else 16),
        textcoords="offset points",
        fontsize="small",
        color=BEST,
        ha="left",
        va="center",
        zorder=6,
        bbox={
            "boxstyle": "round,pad=0.2",
            "facecolor": "white",
            "alpha": 0.85,
            "edgecolor": "none",
        },
        arrowprops={"arrowstyle": "->", "color": BEST},
    )


@dataclass(frozen=True)
class YRange:
    """The y axis of a plateau chart: its scale and limits; values beyond the limits are
    drawn at the edge (:meth:`clamp`), so every mark stays inside the plot."""

    low: float
    high: float
    scale: str = "linear"
    """``linear``, ``log`` or ``symlog``."""
    linthresh: float = 1.0
    clipped_start: bool = False
    """The start value lies beyond the limits (the chart writes it out)."""
    clipped: int = 0
    """How many measured values lie beyond the limits."""

    def clamp(self, value: float) -> float:
        """``value`` moved inside the limits (NaN stays NaN)."""
        if math.isnan(value):
            return value
        inset = self._inset()
        return min(max(value, inset[0]), inset[1])

    def apply(self, axes: Axes) -> None:
        if self.scale == "log":
            axes.set_yscale("log")
            # plain labels: mathtext (10^k) costs more than drawing 1,000 points
            axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            axes.yaxis.set_minor_formatter(NullFormatter())
        elif self.scale == "symlog":
            axes.set_yscale("symlog", linthresh=self.linthresh)
            axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            axes.yaxis.set_minor_formatter(NullFormatter())
        axes.set_ylim(self.low, self.high)

    def _inset(self) -> tuple[float, float]:
        """The limits pulled in a little, so an edge mark is drawn whole inside the plot."""
        if self.scale == "log":
            ratio = (self.high / self.low) ** 0.02
            return self.low * ratio, self.high / ratio
        if self.scale == "symlog":
            return (
                self.low + (self.high - self.low) * 1e-3,
                self.high - (self.high - self.low) * 1e-3,
            )
        step = (self.high - self.low) * 0.02
        return self.low + step, self.high - step


def y_range(measured: Sequence[float], best: Sequence[float], start: float | None) -> YRange:
    """The y axis that shows the interesting part: the best-so-far line after the start,
    and the measured values and the start when they lie near it. A value far from it (a
    start far above, a wild measurement) is drawn at the edge instead of squashing the
    line flat, and a clipped start is written out. A best-so-far line spanning orders of
    magnitude gets a log scale (all positive) or symlog (some at or below zero).

    >>> y = y_range([5.0, 4.8, 4.6], [4.8, 4.6, 4.6], 1000.0)
    >>> y.clipped_start, y.high < 10
    (True, True)
    """
    focus = list(best) or list(measured) or ([] if start is None else [start])
    if not focus:
        return _padded(0.0, 1.0, "linear", 1.0)
    low, high = min(focus), max(focus)
    magnitudes = [abs(v) for v in focus if v != 0]
    wide = bool(magnitudes) and max(magnitudes) / min(magnitudes) > LOG_RATIO
    if wide and low > 0:
        scale, window = "log", (low / NEAR_FACTOR, high * NEAR_FACTOR)
    else:
        reach = NEAR_SPANS * max(high - low, abs(low), abs(high), 1e-9)
        scale, window = ("symlog" if wide else "linear"), (low - reach, high + reach)
    others = [*measured, *([] if start is None else [start])]
    kept = [*focus, *(v for v in others if window[0] <= v <= window[1])]
    zoom = _padded(min(kept), max(kept), scale, min(magnitudes) if magnitudes else 1.0)
    outside = sum(1 for v in measured if not zoom.low <= v <= zoom.high)
    clipped_start = start is not None and not zoom.low <= start <= zoom.high
    return replace(zoom, clipped=outside, clipped_start=clipped_start)


def _padded(low: float, high: float, scale: str, linthresh: float) -> YRange:
    if scale == "log":
        ratio = (high / low) ** 0.08 if high > low else 2.0
        return YRange(low / ratio, high * ratio, "log")
    if scale == "symlog":  # pad as drawn: in the scale's own coordinates

        def out(v: float) -> float:
            return math.copysign(math.log10(1 + abs(v) / linthresh), v)

        def back(t: float) -> float:
            return math.copysign((10 ** abs(t) - 1) * linthresh, t)

        step = (out(high) - out(low)) * 0.08
        return YRange(back(out(low) - step), back(out(high) + step), scale, linthresh)
    pad = (high - low) * 0.08 or max(abs(high) * 0.05, 0.5)
    return YRange(low - pad, high + pad, scale, linthresh)


def _points(rounds: Iterable[RoundView]) -> tuple[list[int], list[float]]:
    """Rounds and metrics of the rounds that measured one (crashed rounds are drawn apart)."""
    xs: list[int] = []
    ys: list[float] = []
    for round_view in rounds:
        if round_view.metric is not None and not crashed(round_view):
            xs.append(round_view.round)
            ys.append(round_view.metric)
    return xs, ys


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value
