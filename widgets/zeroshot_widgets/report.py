"""A headless report of one auto-research run: chart, incumbent card and evidence table.

For papermill report notebooks and batch jobs: nothing here needs a widget front end.
``show_report`` displays through ``IPython.display`` (so it lands in the executed
notebook); ``report_html`` returns one self-contained HTML page, chart embedded as PNG.

Example (a report notebook cell)::

    from zeroshot_widgets.report import show_report
    show_report(ledger, run_id)      # ledger: a URL/path, a Client or a Ledger
"""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass
from pathlib import Path

from zeroshot_kernel.auto_research.studies.catalog import (
    candidates_in_flight,
    in_flight_text,
    round_in_progress,
    study_round_offset,
)
from zeroshot_kernel.auto_research.views import ResearchView, load_research_view
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.ledger.failure import explain_failure
from zeroshot_kernel.workspace import find_workspace, ledger_url
from zeroshot_widgets.charts import plateau_png
from zeroshot_widgets.evidence_table import incumbent_card_html, rounds_table, rounds_table_html
from zeroshot_widgets.run_info import RunInfo

Source = Client | Ledger | str | os.PathLike[str]
"""Where the run lives: a client, a ledger, or a ledger URL / SQLite path."""


@dataclass(frozen=True)
class Report:
    """The parts of a report, each ready to display or embed."""

    title: str
    view: ResearchView
    png: bytes
    card_html: str
    table_html: str
    failure_html: str = ""
    """Why the run failed (empty when it did not)."""
    progress_html: str = ""
    """The round in progress and the candidates being measured (empty once it ended)."""

    def html(self) -> str:
        """One standalone HTML page."""
        image = base64.b64encode(self.png).decode("ascii")
        title = html.escape(self.title)
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f"<title>{title}</title></head>"
            '<body style="font-family:sans-serif;max-width:1100px;margin:1em auto">'
            f"<h1>{title}</h1>"
            f"{self.progress_html}{self.failure_html}"
            f'<img alt="plateau chart" src="data:image/png;base64,{image}">'
            f"{self.card_html}<h2>Rounds</h2>{self.table_html}</body></html>\n"
        )


def build_report(source: Source, run_id: str) -> Report:
    """Read the run (once, from the start) and render every part."""
    ledger, workspace = _ledger(source)
    try:
        info = RunInfo.load(ledger, run_id, workspace)
        view = load_research_view(ledger, run_id)
        cause = explain_failure(event for _, event in ledger.snapshot_and_tail(run_id, None)[1])
        progress = "" if view.terminal else _progress_html(ledger, workspace, run_id, view)
    finally:
        if not isinstance(source, Client | Ledger):
            ledger.close()
    title = f"{info.title or run_id} ({run_id})"
    return Report(
        title=title,
        view=view,
        png=plateau_png(view, metric=info.metric),
        card_html=incumbent_card_html(view, metric=info.metric),
        table_html=rounds_table_html(rounds_table(view)),
        progress_html=progress,
        failure_html=""
        if cause is None
        else (
            '<pre style="color:#d62728;white-space:pre-wrap">'
            + html.escape("\n".join(cause.lines()))
            + "</pre>"
        ),
    )


def report_html(source: Source, run_id: str) -> str:
    """The report as a standalone HTML page (chart embedded as a PNG data URL).

    Example::

        Path("report.html").write_text(report_html("ledger.db", run_id))
    """
    return build_report(source, run_id).html()


def show_report(source: Source, run_id: str) -> None:
    """Display the chart, the incumbent card and the evidence table in the current cell."""
    from IPython.display import display

    report = build_report(source, run_id)
    png = base64.b64encode(report.png).decode("ascii")
    display(  # type: ignore[no-untyped-call]
        {
            "text/html": f"<h3>{html.escape(report.title)}</h3>"
            f"{report.progress_html}{report.failure_html}"
        },
        {"image/png": png, "text/plain": "<plateau chart>"},
        {"text/html": report.card_html},
        {"text/html": report.table_html},
        raw=True,
    )


def _progress_html(ledger: Ledger, workspace: Path, run_id: str, view: ResearchView) -> str:
    """``Round 7 in progress · measuring 3 candidates: ...`` for a run still going: a
    report of a live run says what it is doing (several candidates with ``--parallel``)."""
    active = round_in_progress(view, study_round_offset(ledger, workspace, run_id))
    flight = candidates_in_flight(ledger, workspace, run_id, active)
    text = f"Round {active} in progress" + in_flight_text(flight)
    return f'<p class="zeroshot-progress"><b>{html.escape(text)}</b></p>'


def _ledger(source: Source) -> tuple[Ledger, Path]:
    """The ledger to read and the workspace that relative task folders resolve in."""
    if isinstance(source, Client):
        return source.ledger, source.workspace
    workspace = find_workspace()
    if isinstance(source, Ledger):
        return source, workspace
    return Ledger(ledger_url(os.fspath(source), workspace)), workspace
