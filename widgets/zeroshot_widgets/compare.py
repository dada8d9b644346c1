"""Compare studies: best-so-far curves overlaid against measured candidates and against model
cost, and the incumbents side by side.

The figure is built from ``matplotlib.figure.Figure`` directly (no pyplot state) and shown
as PNG bytes in an ``Image`` widget, so it renders alike in JupyterLab, Notebook 7, VS Code
and Colab, and a script can save it.

Example::

    from zeroshot_kernel.client import Client
    from zeroshot_widgets import compare_studies

    compare_studies(Client(), ["branin-local", "branin-claude", "branin-gpt"])

    # in a script
    from zeroshot_kernel.auto_research.studies.table import study_rows
    from zeroshot_widgets.compare import comparison_figure
    rows = [r for r in study_rows(Client()) if r.name in ("branin-local", "branin-claude")]
    comparison_figure(rows).savefig("compare.png", dpi=150)
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from typing import Literal

import ipywidgets as widgets
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from zeroshot_kernel.auto_research.studies.catalog import StudyError
from zeroshot_kernel.auto_research.studies.table import (
    CurvePoint,
    StudyRow,
    format_duration,
    format_metric,
    study_rows,
)
from zeroshot_kernel.client import Client

CostAxis = Literal["auto", "usd", "tokens", "calls"]
COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
)
LOG_RATIO = 100.0
"""Best-so-far values spanning more than this factor (all positive) use a log scale."""
_COST_LABELS = {
    "usd": "model cost (US$, as the harnesses reported it)",
    "tokens": "model tokens (input + output)",
    "calls": "model calls (agent executions)",
}


def legend_label(row: StudyRow) -> str:
    """``study — harness/model``: how a curve is named in the legend."""
    return f"{row.name} — {row.harness_model}"


def cost_axis(
    rows: Sequence[StudyRow], cost: CostAxis = "auto"
) -> Literal["usd", "tokens", "calls"]:
    """The measure of cost to draw: ``auto`` takes money when every study's harness
    reported it, else tokens when every one reported them, else model calls (which every
    harness has, the embedded agents included)."""
    if cost != "auto":
        return cost
    with_runs = [r for r in rows if r.runs]
    if with_runs and all(r.cost_usd is not None for r in with_runs):
        return "usd"
    if with_runs and all(r.tokens is not None for r in with_runs):
        return "tokens"
    return "calls"


def comparison_figure(
    rows: Sequence[StudyRow],
    *,
    cost: CostAxis = "auto",
    title: str | None = None,
    size: tuple[float, float] = (12.0, 5.0),
    dpi: int = 100,
) -> Figure:
    """Two panels, one step line per study in each: best so far against candidates measured
    (left) and against model cost (right; see :func:`cost_axis`). A study whose harness did
    not report the chosen cost is left out of the right panel, which says so. Studies of
    different tasks or metrics share no scale: each curve is then drawn relative to its own
    start, and the figure says so (see :func:`mixed_warning`)."""
    figure = Figure(figsize=size, dpi=dpi)
    left, right = figure.subplots(1, 2, sharey=True)
    measure = cost_axis(rows, cost)
    figure.subplots_adjust(left=0.07, right=0.98, top=0.84, bottom=0.24, wspace=0.06)
    metric, direction = _metric_label(rows)
    warning = mixed_warning(rows)
    figure.suptitle(
        title or f"best so far ({direction}): against candidates measured and against model cost",
        x=0.07,
        ha="left",
        fontsize="large",
    )
    if warning:
        figure.text(0.07, 0.905, warning, ha="left", fontsize="small", color="#b35900")
    left.set_xlabel("candidates measured")
    left.set_ylabel(
        f"best, change from its start ({direction})" if warning else f"best {metric} ({direction})"
    )
    right.set_xlabel(_COST_LABELS[measure])
    values: list[float] = []
    missing = []
    for index, row in enumerate(rows):
        color = COLORS[index % len(COLORS)]
        points = [p for p in row.curve if p.best is not None]
        ys = [p.best for p in points if p.best is not None]
        if warning:
            ys = _relative(ys)
            points = points[: len(ys)]
        values += ys
        label = f"{legend_label(row)}: best {format_metric(row.best)}"
        _curve(left, [p.evaluations for p in points], ys, color, label)
        xs = [_cost(p, measure) for p in points]
        if points and all(x is not None for x in xs):
            _curve(right, xs, ys, color, label)
        else:
            missing.append(row.name)
    for axes in (left, right):
        axes.grid(True, alpha=0.3)
        axes.set_xlim(left=0)
        if measure != "usd" or axes is left:
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not axes.get_lines():
            axes.text(
                0.5,
                0.5,
                "nothing measured yet",
                ha="center",
                va="center",
                transform=axes.transAxes,
                color="#7f7f7f",
            )
    if missing:
        right.text(
            0.98,
            0.02,
            f"no {measure} reported: {', '.join(missing)}",
            ha="right",
            va="bottom",
            transform=right.transAxes,
            fontsize="small",
            color="#7f7f7f",
        )
    if not warning and values and min(values) > 0 and max(values) / min(values) > LOG_RATIO:
        left.set_yscale("log")
    handles, labels = left.get_legend_handles_labels()
    if handles:
        figure.legend(
            handles,
            labels,
            loc="lower center",
            ncol=min(3, len(handles)),
            frameon=False,
            fontsize="medium",
            bbox_to_anchor=(0.5, 0.0),
        )
    return figure


def comparison_png(
    rows: Sequence[StudyRow],
    *,
    cost: CostAxis = "auto",
    title: str | None = None,
    size: tuple[float, float] = (12.0, 5.0),
    dpi: int = 100,
) -> bytes:
    """:func:`comparison_figure` rendered to PNG bytes."""
    figure = comparison_figure(rows, cost=cost, title=title, size=size, dpi=dpi)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def incumbents_html(rows: Sequence[StudyRow]) -> str:
    """The studies' incumbents side by side: one column per study; its harness and model,
    the incumbent, its metric and the round that adopted it, the effort spent, then one
    line per parameter."""

    def cell(text: str, tag: str = "td") -> str:
        return f"<{tag} style='padding:2px 10px;text-align:left'>{html.escape(text)}</{tag}>"

    params = sorted({name for r in rows if r.incumbent for name in r.incumbent.params})
    lines: list[tuple[str, list[str]]] = [
        ("harness/model", [r.harness_model for r in rows]),
        ("task", [r.task_label for r in rows]),
        ("incumbent", [r.incumbent.candidate_id if r.incumbent else "-" for r in rows]),
        ("metric", [f"{format_metric(r.best)} {r.metric} ({r.direction_label})" for r in rows]),
        ("adopted in round", [str(r.incumbent.round) if r.incumbent else "-" for r in rows]),
        ("rounds / adoptions", [f"{r.rounds} / {r.adoptions}" for r in rows]),
        ("model calls", [str(r.model_calls) for r in rows]),
        ("usage", [r.cost_label for r in rows]),
        ("time", [format_duration(r.duration_s) for r in rows]),
        *((f"param {name}", [_param(r, name) for r in rows]) for name in params),
    ]
    head = "".join(cell(r.name, "th") for r in rows)
    body = "".join(
        f"<tr>{cell(label, 'th')}{''.join(cell(v) for v in values)}</tr>" for label, values in lines
    )
    return (
        f"<table class='zeroshot-incumbents' style='border-collapse:collapse'>"
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


class StudyComparison(widgets.VBox):  # type: ignore[misc]
    """The comparison chart (an ``Image`` of PNG bytes) above the incumbents table."""

    def __init__(self, rows: Sequence[StudyRow], *, cost: CostAxis = "auto") -> None:
        self.rows = list(rows)
        self.png = comparison_png(self.rows, cost=cost)
        self.chart = widgets.Image(
            value=self.png, format="png", layout=widgets.Layout(max_width="100%")
        )
        self.incumbents = widgets.HTML(incumbents_html(self.rows))
        warning = mixed_warning(self.rows)
        self.warning = widgets.HTML(
            f"<span style='color:#b35900'>⚠ {html.escape(warning)}</span>" if warning else ""
        )
        super().__init__(
            children=[self.warning, self.chart, widgets.HTML("<b>incumbents</b>"), self.incumbents]
        )


def compare_studies(
    client: Client | None, names: Sequence[str], *, cost: CostAxis = "auto"
) -> StudyComparison:
    """A :class:`StudyComparison` of the studies ``names`` (in that order) of the client's
    workspace and ledger; :class:`~zeroshot_kernel.auto_research.StudyError` (a
    ``ValueError``) names the studies it does not know."""
    client = client or Client()
    found = {row.name: row for row in study_rows(client)}
    unknown = [name for name in names if name not in found]
    if unknown:
        raise StudyError(
            f"no study {', '.join(map(repr, unknown))} in {client.workspace} or its ledger's "
            f"runs; studies: {', '.join(found) or 'none yet'}"
        )
    return StudyComparison([found[name] for name in names], cost=cost)


def mixed_warning(rows: Sequence[StudyRow]) -> str:
    """What a comparison of studies on different tasks or metrics must say (``""`` when
    they share one): their values are not on one scale, so each is drawn against its start."""
    tasks = sorted({f"{r.task.rsplit('/', 1)[-1] or '-'} ({r.metric})" for r in rows})
    if len(tasks) < 2:
        return ""
    return (
        f"different tasks: {', '.join(tasks)}; each curve is its best relative to its own "
        "start ((best - start) / |start|), not the metric itself"
    )


def _relative(values: Sequence[float]) -> list[float]:
    """``values`` as changes relative to the first (none when the first is zero)."""
    if not values or values[0] == 0:
        return []
    start = values[0]
    return [(value - start) / abs(start) for value in values]


def _curve(
    axes: Axes, xs: Sequence[float | None], ys: Sequence[float], color: str, label: str
) -> None:
    if not ys:
        return
    axes.step(xs, ys, where="post", color=color, linewidth=1.8, label=label)
    axes.scatter(xs[:1], ys[:1], marker="D", s=22, color=color, zorder=3)  # the start
    axes.scatter(
        xs[-1:],
        ys[-1:],
        marker="o",
        s=30,
        color=color,
        edgecolors="black",
        linewidths=0.5,
        zorder=4,
    )  # where it stands now


def _cost(point: CurvePoint, measure: str) -> float | None:
    if measure == "calls":
        return float(point.model_calls)
    value = point.cost_usd if measure == "usd" else point.tokens
    if value is None and point.evaluations == 0 and point.model_calls == 0:
        return 0.0  # where the study started: nothing spent yet
    return None if value is None else float(value)


def _metric_label(rows: Sequence[StudyRow]) -> tuple[str, str]:
    """The metric's name and which way is better (saying so when the studies differ)."""
    metrics = {r.metric for r in rows}
    directions = {r.direction_label for r in rows}
    metric = metrics.pop() if len(metrics) == 1 else "metric (each study's own)"
    direction = directions.pop() if len(directions) == 1 else "directions differ"
    return metric, direction


def _param(row: StudyRow, name: str) -> str:
    value = row.incumbent.params.get(name) if row.incumbent else None
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else str(value)
