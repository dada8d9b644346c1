"""``StudyBrowser``: the studies of a workspace and their runs in a ledger (SQLite or
PostgreSQL) as a table you can sort, filter and select from; compare the selected studies,
export their rounds as CSV, or open a row's monitor.

Click a column header (or pick a column under "sort by") to sort, click it again to reverse;
type in "filter" to keep the rows whose study, task, harness/model or status contain every
word; tick studies and press "Compare" for :func:`zeroshot_widgets.compare.compare_studies`,
or "Export CSV" to write each one's rounds (``Study.write_csv``) to
``<workspace>/exports/<study>-rounds.csv``; "open" shows the row's :class:`RunMonitor` (a
study's: its latest run's) above the table, under the buttons.

Example::

    from zeroshot_kernel.client import Client
    from zeroshot_widgets import StudyBrowser

    browser = StudyBrowser(Client("postgresql+psycopg://lab@db/zeroshot"))
    browser          # then: browser.select(["a", "b"]); browser.compare(); browser.export_csv()
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.auto_research import Study, StudyError
from zeroshot_kernel.auto_research.studies.table import (
    COLUMNS,
    RunCache,
    RunRow,
    StudyRow,
    filter_rows,
    format_duration,
    format_metric,
    sort_rows,
    study_rows,
)
from zeroshot_kernel.client import Client
from zeroshot_kernel.safe_files import FileRefused
from zeroshot_widgets.compare import CostAxis, StudyComparison
from zeroshot_widgets.monitor import RunMonitor

CHECK_PX = 24
OPEN_PX = 52
CHAR_PX = 7.6
"""The widest character of the table's 12 px font (digits of DejaVu Sans): a column at
``CHAR_PX`` per character of its longest value shows it whole."""
PAD_PX = 10
MAX_COLUMN_PX = 260
"""A column never takes more than this (a longer value is cut, in full in its title)."""
GRID_COLUMNS = " ".join(["24px", *("minmax(60px, 1fr)" for _ in COLUMNS), "52px"])
"""The grid's tracks before the first render; each render sizes them from what it shows
(:func:`grid_columns`)."""
FONT_PX = 12
_BUTTON_CSS = (
    "<style>.zeroshot-study-header, .zeroshot-open{padding:0 4px;font-size:12px}"
    ".zeroshot-study-header{text-align:left}</style>"
)
_ARROWS = {"minimize": "↓", "maximize": "↑"}
_STATUS_COLORS = {"succeeded": "#2ca02c", "failed": "#d62728", "running": "#1f77b4"}
EXPORT_FOLDER = "exports"
"""Where "Export CSV" writes, under the workspace (unless ``export_folder`` says otherwise)."""


class StudyBrowser(widgets.VBox):  # type: ignore[misc]
    """A sortable, filterable table of studies and their runs, with selection, comparison,
    CSV export and a monitor; ``refresh()`` re-reads the ledger (finished runs are read
    once)."""

    def __init__(
        self,
        client: Client | None = None,
        *,
        sort: str = "started",
        descending: bool = True,
        show_runs: bool = True,
        max_rows: int = 200,
        export_folder: str | os.PathLike[str] | None = None,
        **monitor_options: Any,
    ) -> None:
        self.client = client or Client()
        self.max_rows = max_rows
        self.export_folder = Path(export_folder or Path(self.client.workspace) / EXPORT_FOLDER)
        """Where :meth:`export_csv` writes (created when first needed)."""
        self.exported_paths: list[Path] = []
        """The files the last export wrote."""
        self.monitor: RunMonitor | None = None
        self.comparison: StudyComparison | None = None
        self.all_rows: list[StudyRow] = []
        self.rows: list[StudyRow] = []
        """The studies shown, in the order shown."""
        self.selected: set[str] = set()
        self._cache = RunCache()
        self._monitor_options = monitor_options
        self.filter = widgets.Text(
            placeholder="study, task, harness, status…",
            description="filter",
            continuous_update=True,
        )
        self.sort_column = widgets.Dropdown(
            options=list(COLUMNS), value=sort, description="sort by"
        )
        self.descending = widgets.Checkbox(value=descending, description="descending", indent=False)
        self.show_runs = widgets.Checkbox(value=show_runs, description="show runs", indent=False)
        self.compare_button = widgets.Button(
            description="Compare",
            icon="line-chart",
            disabled=True,
            tooltip="overlay the selected studies",
        )
        self.export_button = widgets.Button(
            description="Export CSV",
            icon="download",
            disabled=True,
            tooltip="write the selected studies' rounds as CSV files, one per study",
        )
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.summary = widgets.HTML()
        self._hidden = 0
        """Studies the filter matches beyond those shown."""
        self.message = widgets.HTML()
        self.exported = widgets.HTML()
        """The files the last export wrote (or why it wrote none)."""
        self.exported.add_class("zeroshot-exported")
        self.grid = widgets.GridBox(
            layout=widgets.Layout(
                grid_template_columns=GRID_COLUMNS,
                grid_gap="0px 4px",
                width="100%",
                max_height="420px",
                overflow="auto",
                align_items="center",
            )
        )
        self.compare_box = widgets.VBox()
        self.monitor_box = widgets.VBox()
        self._quiet = False
        self._widths: dict[str, int] = {}
        """Each column's least width in px, from what the last render showed."""
        for control in (self.filter, self.sort_column, self.descending, self.show_runs):
            control.observe(lambda _: None if self._quiet else self._render(), names="value")
        self.compare_button.on_click(lambda _: self.compare())
        self.export_button.on_click(lambda _: self.export_csv())
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__(
            children=[
                widgets.HTML(
                    f"studies and runs in <code>{html.escape(self.client.display_url)}</code>"
                    + _BUTTON_CSS
                ),
                widgets.HBox([self.filter, self.sort_column, self.descending, self.show_runs]),
                widgets.HBox(
                    [self.compare_button, self.export_button, self.refresh_button, self.summary]
                ),
                self.message,
                self.exported,
                self.monitor_box,
                self.grid,
                self.compare_box,
            ]
        )
        self.refresh()

    # --- what a user does --------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the studies and runs (finished runs come from the cache)."""
        self.all_rows = study_rows(self.client, cache=self._cache)
        self.selected &= {row.name for row in self.all_rows}
        self._render()

    def sort_by(self, column: str, descending: bool | None = None) -> None:
        """Sort by ``column`` (one of ``COLUMNS``); the same column again reverses it,
        as clicking its header does."""
        if column not in COLUMNS:
            raise ValueError(f"no column {column!r}; choose one of {', '.join(COLUMNS)}")
        if descending is None:
            descending = not self.descending.value if column == self.sort_column.value else False
        self._quiet = True  # one redraw, not one per control
        try:
            self.descending.value = descending
            self.sort_column.value = column
        finally:
            self._quiet = False
        self._render()

    def select(self, names: list[str] | set[str], selected: bool = True) -> None:
        """Tick (or untick) studies, as their checkboxes do."""
        for name in names:
            self._toggle(name, selected)
        self._render()

    def compare(
        self, names: list[str] | None = None, *, cost: CostAxis = "auto"
    ) -> StudyComparison | None:
        """Show the comparison of ``names`` (default: the selected studies, in table
        order) below the table, and return it."""
        by_name = {row.name: row for row in self.all_rows}
        chosen = names if names is not None else self._chosen()
        rows = [by_name[name] for name in chosen if name in by_name]
        if not rows:
            self.message.value = "tick one or more studies to compare"
            return None
        self.message.value = ""
        self.comparison = StudyComparison(rows, cost=cost)
        self.compare_box.children = (self.comparison,)
        return self.comparison

    def export_csv(self, names: list[str] | None = None) -> list[Path]:
        """Write the rounds of ``names`` (default: the selected studies, in table order),
        one CSV file per study, ``<export_folder>/<study>-rounds.csv`` (each replaced
        atomically, never through a symbolic link), show their paths below the buttons,
        and return them. A study whose records are not in this workspace (only its runs
        are in the ledger), or whose file is a link, is named instead."""
        chosen = names if names is not None else self._chosen()
        if not chosen:
            self.exported.value = "tick one or more studies to export"
            self.exported_paths = []
            return []
        written: list[tuple[Path, int]] = []
        problems: list[str] = []
        for name in chosen:
            try:
                study = Study.open(self.client.workspace, name, client=self.client)
                self.export_folder.mkdir(parents=True, exist_ok=True)
                path = study.write_csv(self.export_folder / f"{study.name}-rounds.csv")
                written.append((path.resolve(), len(study.rounds())))
            except (StudyError, FileRefused, OSError) as problem:  # a link at the path too
                problems.append(f"{name}: {problem}")
        self.exported_paths = [path for path, _ in written]
        lines = [
            f"wrote <code>{html.escape(str(path))}</code> ({count} round{'s' * (count != 1)})"
            for path, count in written
        ] + [f"<span style='color:#d62728'>not exported: {html.escape(p)}</span>" for p in problems]
        self.exported.value = "<br>".join(lines)
        return self.exported_paths

    def open_run(self, run_id: str) -> RunMonitor:
        """Show a monitor on ``run_id`` right above the table, under the buttons, where
        it is seen without scrolling past the table (closing the previous one)."""
        if self.monitor is not None:
            if self.monitor.run_id == run_id:
                return self.monitor
            self.monitor.close()
        self.monitor = RunMonitor(self.client, run_id, **self._monitor_options)
        self.monitor_box.children = (self.monitor,)
        return self.monitor

    def open_study(self, name: str) -> RunMonitor | None:
        """The monitor of the study's latest run (None: no run of it in this ledger)."""
        row = next((r for r in self.all_rows if r.name == name), None)
        if row is None or not row.runs:
            self.message.value = html.escape(f"study {name} has no run in this ledger")
            return None
        return self.open_run(row.runs[-1].run_id)

    @property
    def order(self) -> list[str]:
        """The studies shown, in order (what a test or a script reads)."""
        return [row.name for row in self.rows]

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        super().close()

    # --- drawing ---------------------------------------------------------------------

    def _chosen(self) -> list[str]:
        """The selected studies, in table order."""
        return [row.name for row in self._ordered(self.all_rows) if row.name in self.selected]

    def _ordered(self, rows: list[StudyRow]) -> list[StudyRow]:
        return sort_rows(rows, self.sort_column.value, descending=self.descending.value)

    def _render(self) -> None:
        shown = self._ordered(filter_rows(self.all_rows, self.filter.value))
        self.rows = shown[: self.max_rows]
        cells: list[widgets.Widget] = [widgets.HTML("")]
        self._widths = {}
        for column in COLUMNS:
            cells.append(self._header(column))
        cells.append(widgets.HTML(""))
        for row in self.rows:
            cells += self._study_cells(row)
            if self.show_runs.value and len(row.runs) > 0:
                for run in reversed(row.runs):
                    cells += self._run_cells(run)
        self.grid.children = tuple(cells)
        self.grid.layout.grid_template_columns = grid_columns(self._widths)
        self._hidden = len(shown) - len(self.rows)
        self._summarise()
        self.compare_button.disabled = self.export_button.disabled = not self.selected

    def _header(self, column: str) -> widgets.Button:
        arrow = ""
        if column == self.sort_column.value:
            arrow = " ▼" if self.descending.value else " ▲"
        button = widgets.Button(
            description=column + arrow,
            tooltip=f"sort by {column}",
            layout=widgets.Layout(width="auto", height="28px"),
        )
        button.add_class("zeroshot-study-header")
        self._fit(column, column + arrow)
        button.on_click(lambda _, c=column: self.sort_by(c))
        return button

    def _study_cells(self, row: StudyRow) -> list[widgets.Widget]:
        check = widgets.Checkbox(
            value=row.name in self.selected, indent=False, layout=widgets.Layout(width="24px")
        )
        check.observe(lambda change, n=row.name: self._checked(n, change["new"]), names="value")
        arrow = _ARROWS.get(row.direction or "", "")
        best = (
            f"<span title='{html.escape(row.metric)}, {row.direction_label}'>"
            f"{format_metric(row.best)} {arrow}</span>"
        )
        values = [
            f"<b>{html.escape(row.name)}</b>"
            + (f" <span title='{html.escape(row.problem)}'>⚠</span>" if row.problem else ""),
            html.escape(row.task_label),
            html.escape(row.harness_model),
            _status(row.status),
            best,
            str(row.rounds),
            str(row.adoptions),
            str(row.model_calls),
            html.escape(row.cost_label),
            _started(row.started) if row.started else "-",
            format_duration(row.duration_s) if row.runs else "-",
        ]
        self._fit_all(values)
        return [
            check,
            *(_cell(v) for v in values),
            self._open_button(lambda n=row.name: self.open_study(n), not row.runs),
        ]

    def _run_cells(self, run: RunRow) -> list[widgets.Widget]:
        usage = (
            ", ".join(
                p
                for p in (
                    f"{run.tokens:,} tokens" if run.tokens is not None else "",
                    f"${run.cost_usd:.4f}" if run.cost_usd is not None else "",
                )
                if p
            )
            or "-"
        )
        values = [
            f"&nbsp;&nbsp;↳ <code>{html.escape(run.run_id)}</code>",
            "",
            html.escape(f"{run.harness}/{run.model}"),
            _status(run.status_label),
            format_metric(run.best),
            str(run.rounds),
            str(run.adoptions),
            str(run.model_calls),
            html.escape(usage),
            _started(run.started),
            format_duration(run.duration_s),
        ]
        self._fit_all(values)
        return [
            widgets.HTML(""),
            *(_cell(v, muted=True) for v in values),
            self._open_button(lambda r=run.run_id: self.open_run(r), False),
        ]

    def _fit(self, column: str, shown: str) -> None:
        """Widen ``column`` to show ``shown`` (HTML) whole."""
        self._widths[column] = max(self._widths.get(column, 0), text_px(shown))

    def _fit_all(self, values: list[str]) -> None:
        for column, value in zip(COLUMNS, values, strict=True):
            self._fit(column, value)

    def _open_button(self, action: Any, disabled: bool) -> widgets.Button:
        button = widgets.Button(
            description="open",
            disabled=disabled,
            tooltip="open its monitor above the table",
            layout=widgets.Layout(width=f"{OPEN_PX}px", height="26px"),
        )
        button.add_class("zeroshot-open")
        button.on_click(lambda _: action())
        return button

    def _checked(self, name: str, value: bool) -> None:
        self._toggle(name, value)
        self._summarise()
        self.compare_button.disabled = self.export_button.disabled = not self.selected

    def _summarise(self) -> None:
        """The line above the table; an empty table says why and what to do."""
        if not self.all_rows:
            self.summary.value = (
                "no study in this workspace's ledger yet: start one with "
                "<code>zeroshot research run rosenbrock --iterations 5</code> or the Launcher"
            )
            return
        if not self.rows:
            self.summary.value = (
                f"none of the {len(self.all_rows)} studies matches "
                f"<code>{html.escape(self.filter.value)}</code>: change or clear the filter"
            )
            return
        self.summary.value = (
            f"{len(self.rows)} of {len(self.all_rows)} studies"
            + (f" ({self._hidden} more: narrow the filter)" if self._hidden else "")
            + (f"; {len(self.selected)} selected" if self.selected else "")
        )

    def _toggle(self, name: str, value: bool) -> None:
        if value:
            self.selected.add(name)
        else:
            self.selected.discard(name)


def text_px(shown: str) -> int:
    """The width that shows ``shown`` (HTML: its text) whole in the table's font, at most
    ``MAX_COLUMN_PX``."""
    text = html.unescape(re.sub(r"<[^>]*>", "", shown))
    return min(MAX_COLUMN_PX, round(len(text) * CHAR_PX) + PAD_PX)


def grid_columns(widths: dict[str, int]) -> str:
    """The grid's tracks: the check box, each column at least as wide as its widest value
    (sharing what is left in proportion: ``minmax(120px, 120fr)``) and the "open"
    button. Narrower than their sum, the table scrolls sideways instead of cutting."""
    tracks = [f"minmax({widths.get(c, 60)}px, {widths.get(c, 60)}fr)" for c in COLUMNS]
    return " ".join([f"{CHECK_PX}px", *tracks, f"{OPEN_PX}px"])


def _started(when: Any) -> str:
    """``12-05 16:59`` with the year in its title (the column stays narrow)."""
    return f"<span title='{when.strftime('%Y-%m-%d %H:%M')}'>{when.strftime('%m-%d %H:%M')}</span>"


def _cell(value: str, *, muted: bool = False) -> widgets.HTML:
    style = f"white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:{FONT_PX}px"
    if muted:
        style += ";color:#666"
    return widgets.HTML(
        f"<div style='{style}'>{value}</div>", layout=widgets.Layout(overflow="hidden")
    )


def _status(status: str) -> str:
    color = _STATUS_COLORS.get(status.split(":", 1)[0].split(" · ", 1)[0], "#555")
    return f"<span style='color:{color}' title='{html.escape(status)}'>{html.escape(status)}</span>"
