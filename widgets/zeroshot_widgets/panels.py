"""The value widgets a monitor is made of: chart, evidence table, incumbent card.

Each is an ordinary ipywidgets value widget with an ``update(view)`` that sets its value,
so a poller thread may call it (no ``display()``, no ``Output``), and each redraws only
when the view has changed in a way it shows.

Example::

    chart, table = PlateauChart(), RoundsTable()
    view = load_research_view(client, run_id)
    chart.update(view); table.update(view)
    widgets.VBox([chart, table])
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.auto_research.views import ResearchView
from zeroshot_widgets.charts import plateau_png
from zeroshot_widgets.evidence_table import (
    RoundRow,
    incumbent_card_html,
    row_html,
    scrolling_box,
    table_html,
)

MAX_ROWS = 100


class PlateauChart(widgets.Image):  # type: ignore[misc]
    """The plateau chart as a PNG in an ``Image`` widget (renders in every front end)."""

    def __init__(self, *, metric: str = "metric", **kwargs: Any) -> None:
        super().__init__(format="png", **kwargs)
        self.layout.max_width = "820px"
        self.metric = metric
        self._drawn: tuple[int, bool] | None = None

    def update(self, view: ResearchView) -> bool:
        """Redraw when rounds were added or the run ended; returns whether it redrew."""
        key = (len(view.rounds), view.terminal is not None)
        if key == self._drawn:
            return False
        self.value = plateau_png(view, metric=self.metric)
        self._drawn = key
        return True

    def reset(self, *, metric: str | None = None) -> None:
        """Forget what was drawn (the next ``update`` redraws): for another run."""
        self.metric = metric or self.metric
        self._drawn = None


class RoundsTable(widgets.HTML):  # type: ignore[misc]
    """The evidence table, newest round first, capped at ``max_rows`` rows, in a box of
    fixed height that scrolls: one line per round, its details on a click.

    Rows are rendered once, when their round is reviewed; ``rows`` keeps every round.
    """

    def __init__(self, *, max_rows: int = MAX_ROWS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_rows = max_rows
        self.rows: list[RoundRow] = []
        self._html: list[str] = []
        self.layout.width = "100%"
        self.value = scrolling_box(table_html([]))

    def update(self, view: ResearchView) -> bool:
        """Render the rounds not rendered yet; returns whether any were added."""
        new = [RoundRow.of(r) for r in view.rounds[len(self.rows) :]]
        if not new:
            return False
        self.rows += new
        self._html += [row_html(row) for row in new]
        shown = self._html[-self.max_rows :]
        hidden = len(self._html) - len(shown)
        caption = f"newest {len(shown)} of {len(self._html)} rounds" if hidden else ""
        self.value = scrolling_box(table_html(reversed(shown), caption=caption))
        return True

    def reset(self) -> None:
        """Forget every row: for another run."""
        self.rows, self._html = [], []
        self.value = scrolling_box(table_html([]))


class IncumbentCard(widgets.HTML):  # type: ignore[misc]
    """The incumbent, its adopting round, the plateau and the run's outcome."""

    def __init__(self, *, metric: str = "metric", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.metric = metric
        self._shown = ""

    def update(self, view: ResearchView) -> bool:
        html = incumbent_card_html(view, metric=self.metric)
        if html == self._shown:
            return False
        self.value = self._shown = html
        return True

    def reset(self, *, metric: str | None = None) -> None:
        """Forget what was shown: for another run."""
        self.metric = metric or self.metric
        self._shown = ""
