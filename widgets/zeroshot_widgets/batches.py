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
            _json(item.parameters),
            item.status,
            duration,
            _json(item.results) if item.results else "",
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


def recorded_values(status: BatchStatus, name: str) -> list[tuple[int, float]]:
    """(item, value) for every item that recorded a number under ``name``."""
    return [
        (item.index, float(item.results[name]))
        for item in status.items
        if item.results
        and isinstance(item.results.get(name), Real)
        and not isinstance(item.results.get(name), bool)
    ]


def recorded_png(status: BatchStatus, name: str) -> bytes | None:
    """A bar per item of the value it recorded under ``name``; None when none did."""
    values = recorded_values(status, name)
    if not values:
        return None
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(4.0, 0.5 * len(values) + 2), 3), dpi=100)
    axes = figure.subplots()
    axes.bar([str(index) for index, _ in values], [value for _, value in values], color="#1f77b4")
    axes.set(xlabel="item", ylabel=name, title=f"{name} recorded per item")
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
    return status


def _common_number(status: BatchStatus) -> str | None:
    recorded = [item.results for item in status.items if item.results]
    for name in recorded[0] if recorded else ():
        if all(
            isinstance(r.get(name), Real) and not isinstance(r.get(name), bool) for r in recorded
        ):
            return name
    return None


def _json(value: object) -> str:
    return f"<code>{html.escape(json.dumps(value, sort_keys=True))}</code>"
