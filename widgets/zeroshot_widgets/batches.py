"""A batch of notebooks as a table and a chart: each item's parameters, status, duration,
what it recorded and why it failed; for report notebooks and the run browser.

Example (a report notebook cell)::

    from zeroshot_widgets.batches import show_batch
    show_batch(".zeroshot/ledger.db", "batch-abcdefghijkl")
"""

from __future__ import annotations

import html
import io
import json
import os
from numbers import Real

from zeroshot_kernel.batch import BatchStatus, batch_status
from zeroshot_widgets.evidence_table import _CELL_STYLE, _TABLE_STYLE

COLUMNS = ("item", "parameters", "status", "duration", "recorded", "error / output")
_STATUS_STYLES = {
    "succeeded": "background:rgba(44,160,44,0.12)",
    "failed": "background:rgba(214,39,40,0.10)",
    "running": "",
    "pending": "",
}


def batch_table_html(status: BatchStatus) -> str:
    """Every item of the batch, one row each, failures and their reasons visible."""
    head = "".join(
        f'<th style="{_CELL_STYLE};border-bottom:2px solid #999">{c}</th>' for c in COLUMNS
    )
    rows = []
    for item in status.items:
        duration = f"{item.duration_s:.1f} s" if item.duration_s is not None else ""
        last = item.error or (os.path.basename(item.output) if item.output else "")
        cells = [
            str(item.index),
            _fields(item.parameters),
            item.status,
            duration,
            _fields(item.results) if item.results else "",
            html.escape(last),
        ]
        tds = "".join(f'<td style="{_CELL_STYLE}">{cell}</td>' for cell in cells)
        rows.append(
            f'<tr class="zeroshot-batch-{item.status}" '
            f'style="{_STATUS_STYLES[item.status]}">{tds}</tr>'
        )
    counts = ", ".join(
        f"{status.count(s)} {s}"
        for s in ("succeeded", "failed", "running", "pending")
        if status.count(s)
    )
    caption = (
        f"{html.escape(status.batch_id)}: {counts} of {len(status.items)} · "
        f"<code>{html.escape(status.notebook)}</code>"
    )
    return (
        f'<table class="zeroshot-batch" style="{_TABLE_STYLE}">'
        f'<caption style="text-align:left;caption-side:top">{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def recorded_values(status: BatchStatus, name: str) -> dict[str, list[tuple[str, float]]]:
    """(item label, value) for every item that recorded a number under ``name``, grouped by
    the metric the item says it measured (its recorded ``metric``, if any): values of
    different metrics share no scale. An item is labelled by the parameters that tell it
    from the others (``3: task=branin``)."""
    varying = _varying_parameters(status)
    groups: dict[str, list[tuple[str, float]]] = {}
    for item in status.items:
        results = item.results or {}
        value = results.get(name)
        if not isinstance(value, Real) or isinstance(value, bool):
            continue
        label = ", ".join(f"{k}={_short(item.parameters[k])}" for k in varying)
        metric = results.get("metric")
        group = f"{name} ({metric})" if isinstance(metric, str) and metric != name else name
        groups.setdefault(group, []).append(
            (f"{item.index}: {label}" if label else str(item.index), float(value))
        )
    return groups


def recorded_png(status: BatchStatus, name: str) -> bytes | None:
    """A bar per item of the value it recorded under ``name``, one panel per metric the
    items measured; None when none recorded it."""
    groups = recorded_values(status, name)
    if not groups:
        return None
    from matplotlib.figure import Figure

    widest = max(len(values) for values in groups.values())
    figure = Figure(figsize=(max(4.0, 1.2 * widest + 2) * len(groups), 3.4), dpi=100)
    for axes, (group, values) in zip(
        figure.subplots(1, len(groups), squeeze=False)[0], groups.items(), strict=True
    ):
        axes.bar([label for label, _ in values], [value for _, value in values], color="#1f77b4")
        axes.set(xlabel="item", ylabel=group, title=f"{group} recorded per item")
        axes.tick_params(axis="x", labelsize="small")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def show_batch(
    ledger: str | os.PathLike[str] | None, batch_id: str, metric: str | None = None
) -> BatchStatus:
    """Display the batch's table and, for ``metric`` (default: the first number every
    succeeded item recorded), its chart; returns the batch."""
    from IPython.display import HTML, Image, display

    status = batch_status(batch_id, ledger=ledger)
    display(HTML(batch_table_html(status)))  # type: ignore[no-untyped-call]
    name = metric or _common_number(status)
    png = recorded_png(status, name) if name else None
    if png is not None:
        display(Image(png))  # type: ignore[no-untyped-call]
    elif metric:  # asked for by name: say why no chart, and what could be charted
        numbers = sorted(_numbers(status))
        known = f"numbers recorded: {', '.join(numbers)}" if numbers else "no number recorded"
        why = f"no item recorded a number named <code>{html.escape(metric)}</code>"
        display(HTML(f"<p>{why}; {html.escape(known)}</p>"))  # type: ignore[no-untyped-call]
    return status


def _numbers(status: BatchStatus) -> set[str]:
    """The names some item recorded a number under."""
    return {
        name
        for item in status.items
        for name, value in (item.results or {}).items()
        if isinstance(value, Real) and not isinstance(value, bool)
    }


def _common_number(status: BatchStatus) -> str | None:
    recorded = [item.results for item in status.items if item.results]
    for name in recorded[0] if recorded else ():
        if all(
            isinstance(r.get(name), Real) and not isinstance(r.get(name), bool) for r in recorded
        ):
            return name
    return None


def _varying_parameters(status: BatchStatus) -> list[str]:
    """The parameter names whose values differ between the batch's items."""
    names = sorted({name for item in status.items for name in item.parameters})
    return [
        name
        for name in names
        if len({json.dumps(item.parameters.get(name), sort_keys=True) for item in status.items}) > 1
    ]


def _short(value: object) -> str:
    """A parameter or recorded value as a person reads it: numbers to 4 significant digits,
    paths by their last part, anything longer than 40 characters cut."""
    if isinstance(value, float):
        return f"{value:.4g}"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if isinstance(value, str) and "/" in value:
        text = value.rstrip("/").rsplit("/", 1)[-1]
    return text if len(text) <= 40 else text[:39] + "…"


def _fields(values: dict[str, object]) -> str:
    """``name: value`` lines, not raw JSON; the full value is the line's tooltip."""
    return "<br>".join(
        f"<span title='{html.escape(json.dumps(value, sort_keys=True), quote=True)}'>"
        f"{html.escape(name)}: {html.escape(_short(value))}</span>"
        for name, value in sorted(values.items())
    )
