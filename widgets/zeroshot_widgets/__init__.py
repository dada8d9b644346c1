"""Notebook widgets, charts and reports for the zeroshot workbench.

Kept apart from ``zeroshot_kernel`` so that the engine never imports UI libraries. Names
load on first use: a papermill report that only calls ``show_report`` never imports
ipywidgets.

Example::

    from zeroshot_widgets import Launcher, RunBrowser, RunMonitor, show_report

    Launcher(task="research_templates/rosenbrock", iterations=3)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zeroshot_kernel.lazy_exports import load_export as _load_export

if TYPE_CHECKING:
    from zeroshot_widgets.batches import batch_table_html, show_batch
    from zeroshot_widgets.browser import RunBrowser
    from zeroshot_widgets.charts import plateau_figure, plateau_png
    from zeroshot_widgets.compare import (
        StudyComparison,
        compare_studies,
        comparison_figure,
        comparison_png,
    )
    from zeroshot_widgets.evidence_table import incumbent_card_html, rounds_table, rounds_table_html
    from zeroshot_widgets.feed import RunFeed
    from zeroshot_widgets.launcher import Launcher
    from zeroshot_widgets.monitor import RunMonitor
    from zeroshot_widgets.panels import IncumbentCard, PlateauChart, RoundsTable
    from zeroshot_widgets.report import report_html, show_report
    from zeroshot_widgets.study_browser import StudyBrowser
    from zeroshot_widgets.study_views import (
        CandidateView,
        StudyInsights,
        importance_figure,
        importance_png,
        parallel_figure,
        parallel_png,
        slice_figure,
        slice_png,
    )

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
    "StudyBrowser": "study_browser",
    "StudyComparison": "compare",
    "compare_studies": "compare",
    "comparison_figure": "compare",
    "comparison_png": "compare",
    "CandidateView": "study_views",
    "StudyInsights": "study_views",
    "importance_figure": "study_views",
    "importance_png": "study_views",
    "parallel_figure": "study_views",
    "parallel_png": "study_views",
    "slice_figure": "study_views",
    "slice_png": "study_views",
}

__all__ = [
    "CandidateView",
    "IncumbentCard",
    "Launcher",
    "PlateauChart",
    "RoundsTable",
    "RunBrowser",
    "RunFeed",
    "RunMonitor",
    "StudyBrowser",
    "StudyComparison",
    "StudyInsights",
    "batch_table_html",
    "compare_studies",
    "comparison_figure",
    "comparison_png",
    "importance_figure",
    "importance_png",
    "incumbent_card_html",
    "parallel_figure",
    "parallel_png",
    "plateau_figure",
    "plateau_png",
    "report_html",
    "rounds_table",
    "rounds_table_html",
    "show_batch",
    "show_report",
    "slice_figure",
    "slice_png",
]


_HOMES = {name: f"zeroshot_widgets.{module}" for name, module in _EXPORTS.items()}


def __getattr__(name: str) -> Any:
    return _load_export(globals(), _HOMES, name)
