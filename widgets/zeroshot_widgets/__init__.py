"""Notebook widgets, charts and reports for the zeroshot workbench.

Kept apart from ``zeroshot_kernel`` so that the engine never imports UI libraries. Names
load on first use: a papermill report that only calls ``show_report`` never imports
ipywidgets.

Example::

    from zeroshot_widgets import Launcher, RunBrowser, RunMonitor, show_report

    Launcher(task="research_templates/rosenbrock", iterations=3)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zeroshot_widgets.batches import batch_table_html, show_batch
    from zeroshot_widgets.browser import RunBrowser
    from zeroshot_widgets.charts import plateau_figure, plateau_png
    from zeroshot_widgets.feed import RunFeed
    from zeroshot_widgets.launcher import Launcher
    from zeroshot_widgets.monitor import RunMonitor
    from zeroshot_widgets.panels import IncumbentCard, PlateauChart, RoundsTable
    from zeroshot_widgets.report import report_html, show_report
    from zeroshot_widgets.tables import incumbent_card_html, rounds_table, rounds_table_html

_EXPORTS = {
    "batch_table_html": "batches",
    "show_batch": "batches",
    "IncumbentCard": "panels",
    "Launcher": "launcher",
    "PlateauChart": "panels",
    "RoundsTable": "panels",
    "RunBrowser": "browser",
    "RunFeed": "feed",
    "RunMonitor": "monitor",
    "incumbent_card_html": "tables",
    "plateau_figure": "charts",
    "plateau_png": "charts",
    "report_html": "report",
    "rounds_table": "tables",
    "rounds_table_html": "tables",
    "show_report": "report",
}

__all__ = [
    "IncumbentCard",
    "Launcher",
    "PlateauChart",
    "RoundsTable",
    "RunBrowser",
    "RunFeed",
    "RunMonitor",
    "batch_table_html",
    "incumbent_card_html",
    "plateau_figure",
    "plateau_png",
    "report_html",
    "rounds_table",
    "rounds_table_html",
    "show_batch",
    "show_report",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'zeroshot_widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"zeroshot_widgets.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
