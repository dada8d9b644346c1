"""``RunBrowser``: the runs in a ledger, newest first; selecting one opens its monitor.
The ledger's batches of notebooks are listed below; selecting one shows its items.

Example::

    from zeroshot_kernel.client import Client
    from zeroshot_widgets import RunBrowser

    RunBrowser(Client("postgresql+psycopg://lab@db/zeroshot"))   # a shared ledger
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.batch import BatchStatus, BatchStore
from zeroshot_kernel.client import Client
from zeroshot_kernel.console.event_lines import describe_result
from zeroshot_kernel.ledger import RunSummary
from zeroshot_widgets.batches import batch_table_html
from zeroshot_widgets.monitor import RunMonitor


class RunBrowser(widgets.VBox):  # type: ignore[misc]
    """A list of runs and one open monitor; ``refresh()`` re-reads the list."""

    def __init__(
        self, client: Client | None = None, *, rows: int = 8, **monitor_options: Any
    ) -> None:
        self.client = client or Client()
        self.monitor: RunMonitor | None = None
        self._monitor_options = monitor_options
        self.runs = widgets.Select(rows=rows, layout=widgets.Layout(width="100%"))
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.monitor_box = widgets.VBox()
        self.batches = widgets.Select(rows=min(rows, 4), layout=widgets.Layout(width="100%"))
        self.batch_html = widgets.HTML()
        self._batch_store = BatchStore(self.client.url)
        self._batches: dict[str, BatchStatus] = {}
        self.refresh_button.on_click(lambda _: self.refresh())
        self.runs.observe(self._selected, names="value")
        self.batches.observe(self._batch_selected, names="value")
        super().__init__(
            children=[
                widgets.HTML(f"runs in <code>{html.escape(self.client.display_url)}</code>"),
                self.runs,
                self.refresh_button,
                self.monitor_box,
                widgets.HTML("batches of notebooks"),
                self.batches,
                self.batch_html,
            ]
        )
        self.refresh()

    def refresh(self) -> None:
        """Re-read the run list (cheap: no snapshots or events are read)."""
        summaries = sorted(self.client.runs(), key=lambda s: s.created_at, reverse=True)
        selected = self.runs.value
        self.runs.options = [(_label(s), s.run_id) for s in summaries]
        if selected in {s.run_id for s in summaries}:
            self.runs.value = selected
        chosen = self.batches.value
        self._batches = {b.batch_id: b for b in self._batch_store.batches()}
        self.batches.options = [(_batch_label(b), b.batch_id) for b in self._batches.values()]
        if chosen in self._batches:
            self.batches.value = chosen
            self.batch_html.value = batch_table_html(self._batches[chosen])

    def open_run(self, run_id: str) -> RunMonitor:
        """Show a monitor on ``run_id`` below the list (closing the previous one)."""
        if self.monitor is not None:
            if self.monitor.run_id == run_id:
                return self.monitor
            self.monitor.close()
        self.monitor = RunMonitor(self.client, run_id, **self._monitor_options)
        self.monitor_box.children = (self.monitor,)
        return self.monitor

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        self._batch_store.close()
        super().close()

    def _batch_selected(self, change: dict[str, Any]) -> None:
        if change["new"] in self._batches:
            self.batch_html.value = batch_table_html(self._batches[change["new"]])

    def _selected(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.open_run(change["new"])


def _label(summary: RunSummary) -> str:
    result = describe_result(summary.terminal) if summary.terminal else summary.phase
    created = summary.created_at.strftime("%Y-%m-%d %H:%M:%S")
    return f"{summary.run_id}  {created}  {summary.title[:40]}  {result[:60]}"


def _batch_label(batch: BatchStatus) -> str:
    counts = ", ".join(
        f"{batch.count(s)} {s}"
        for s in ("succeeded", "failed", "running", "pending")
        if batch.count(s)
    )
    return f"{batch.batch_id}  {counts} of {len(batch.items)}  {batch.notebook[-50:]}"
