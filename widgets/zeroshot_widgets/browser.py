"""``RunBrowser``: the runs in a ledger, newest first; selecting one opens its monitor.

Example::

    from zeroshot_kernel.client import Client
    from zeroshot_widgets import RunBrowser

    RunBrowser(Client("postgresql+psycopg://lab@db/zeroshot"))   # a shared ledger
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.cli.render import describe_result
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger import RunSummary
from zeroshot_widgets.monitor import RunMonitor


class RunBrowser(widgets.VBox):  # type: ignore[misc]
    """A list of runs and one open monitor; ``refresh()`` re-reads the list."""

    def __init__(self, client: Client | None = None, *, rows: int = 8,
                 **monitor_options: Any) -> None:
        self.client = client or Client()
        self.monitor: RunMonitor | None = None
        self._monitor_options = monitor_options
        self.runs = widgets.Select(rows=rows, layout=widgets.Layout(width="100%"))
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.monitor_box = widgets.VBox()
        self.refresh_button.on_click(lambda _: self.refresh())
        self.runs.observe(self._selected, names="value")
        super().__init__(children=[
            widgets.HTML(f"runs in <code>{html.escape(self.client.display_url)}</code>"),
            self.runs,
            self.refresh_button,
            self.monitor_box,
        ])
        self.refresh()

    def refresh(self) -> None:
        """Re-read the run list (cheap: no snapshots or events are read)."""
        summaries = sorted(self.client.runs(), key=lambda s: s.created_at, reverse=True)
        selected = self.runs.value
        self.runs.options = [(_label(s), s.run_id) for s in summaries]
        if selected in {s.run_id for s in summaries}:
            self.runs.value = selected

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
        super().close()

    def _selected(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.open_run(change["new"])


def _label(summary: RunSummary) -> str:
    result = describe_result(summary.terminal) if summary.terminal else summary.phase
    created = summary.created_at.strftime("%Y-%m-%d %H:%M:%S")
    return f"{summary.run_id}  {created}  {summary.title[:40]}  {result[:60]}"
