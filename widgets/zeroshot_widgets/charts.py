"""The plateau chart of an auto-research run, drawn with matplotlib's Agg canvas.

Figures are built from ``matplotlib.figure.Figure`` directly, never through pyplot, so
drawing holds no global state: a poller thread, a report notebook and a benchmark can
render at the same time. Each kind of mark is one artist (one scatter, one collection),
so a run of 1,000 rounds costs about what a run of ten does.

Example::

    from zeroshot_kernel.research.views import load_research_view
    from zeroshot_widgets.charts import plateau_png

    png = plateau_png(load_research_view(client.ledger, run_id))
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from zeroshot_kernel.research.views import ResearchView, RoundView

ADOPTED = "#2ca02c"
REJECTED = "#7f7f7f"
CRASHED = "#d62728"
BEST = "#1f77b4"
RECONSIDERED = "#ff7f0e"
PLATEAU = "#ffbb78"
MIN_PLATEAU = 2
"""Consecutive non-adopting rounds that count as a plateau (the researcher reconsiders its
approach after two accepted non-adoptions)."""
LOG_RATIO = 100.0
"""Metrics spanning more than this factor (all positive) are drawn on a log scale."""


def crashed(round_view: RoundView) -> bool:
    """The experiment produced no usable metric (crashed, timed out, printed none)."""
    return round_view.metric is None or round_view.experiment_status not in ("", "ok")


def plateau_stretches(view: ResearchView, min_length: int = MIN_PLATEAU) -> list[tuple[int, int]]:
    """Maximal runs of consecutive rounds that adopted nothing, as (first, last) rounds.

    >>> from zeroshot_kernel.research.views import research_view
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

    Every mark carries a label (``adopted``, ``rejected``, ``crashed``, ``best so far``,
    ``reconsidered``, ``plateau``) so a reader, or a test, can find it in ``fig.axes[0]``.

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
        axes.text(0.5, 0.5, "no reviewed rounds yet", ha="center", va="center",
                  transform=axes.transAxes, color=REJECTED)
        axes.set_xlim(0, 1)
        return figure

    rounds = view.rounds
    adopted = _points(r for r in rounds if r.adopted)
    rejected = _points(r for r in rounds if not r.adopted)
    start = rounds[0].incumbent_metric
    area = min(1.0, max(0.3, 60 / len(rounds)))  # smaller marks once rounds crowd the axis
    first = rounds[0].round - 1  # a run continuing a study starts after its rounds
    best_x = [first, *(r.round for r in rounds)]
    best_y = [start, *view.best_so_far]
    _plateau_bands(axes, plateau_stretches(view))
    axes.step(best_x, [_nan(v) for v in best_y], where="post", color=BEST, linewidth=1.6,
              label="best so far", zorder=2)
    if start is not None:
        axes.scatter([first], [start], marker="D", s=30, color=BEST, label="start", zorder=3)
    if rejected[0]:
        axes.scatter(*rejected, s=24 * area, facecolors="none", edgecolors=REJECTED,
                     label="rejected", zorder=3)
    if adopted[0]:
        axes.scatter(*adopted, s=40 * area, color=ADOPTED, edgecolors="black",
                     linewidths=0.5, label="adopted", zorder=4)
    _edge_marks(axes, [r.round for r in rounds if crashed(r)], 0.03, "X", CRASHED, "crashed")
    _edge_marks(axes, list(view.reconsiderations), 0.97, "v", RECONSIDERED, "reconsidered")
    values = [*adopted[1], *rejected[1], *([] if start is None else [start])]
    if _log_scale(values):
        axes.set_yscale("log")
        # plain labels: mathtext (10^k) costs more than drawing 1,000 points
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axes.yaxis.set_minor_formatter(NullFormatter())
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

    >>> from zeroshot_kernel.research.views import research_view
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
    return (f"{len(view.rounds)} rounds · incumbent {view.incumbent.candidate_id} = {metric}"
            f" · plateau {view.plateau}")


def _plateau_bands(axes: Axes, stretches: Sequence[tuple[int, int]]) -> None:
    """One collection of full-height bands, in data x and axes y coordinates."""
    if not stretches:
        return
    bands = [[(a - 0.5, 0.0), (b + 0.5, 0.0), (b + 0.5, 1.0), (a - 0.5, 1.0)]
             for a, b in stretches]
    collection = PolyCollection(bands, facecolors=PLATEAU, edgecolors="none", alpha=0.35,
                                transform=axes.get_xaxis_transform(), label="plateau",
                                zorder=1)
    axes.add_collection(collection, autolim=False)


def _edge_marks(axes: Axes, xs: Sequence[int], y: float, marker: str, color: str,
                label: str) -> None:
    """Marks pinned to the bottom or top edge: rounds with no metric value to place."""
    if not xs:
        return
    axes.scatter(xs, [y] * len(xs), marker=marker, s=46, color=color, label=label,
                 transform=axes.get_xaxis_transform(), zorder=5, clip_on=False)


def _points(rounds: Iterable[RoundView]) -> tuple[list[int], list[float]]:
    """Rounds and metrics of the rounds that measured one (crashed rounds are drawn apart)."""
    xs: list[int] = []
    ys: list[float] = []
    for round_view in rounds:
        if round_view.metric is not None and not crashed(round_view):
            xs.append(round_view.round)
            ys.append(round_view.metric)
    return xs, ys


def _log_scale(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) / min(values) > LOG_RATIO


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value
