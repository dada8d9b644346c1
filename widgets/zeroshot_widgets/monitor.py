"""``RunMonitor``: one run, live: phase, rounds, log tail, chart, evidence, Stop and Resume.

Everything is read from the ledger through a cursor (:class:`RunFeed`), so a monitor on a
finished run, on a run the CLI started, or on a run in a shared ledger looks the same as
one on a run launched from this notebook. The poller thread only sets widget values.

Example::

    from zeroshot_kernel.client import Client
    from zeroshot_widgets import RunMonitor

    RunMonitor(Client(), "run-abcdefghijkl")     # last line of a cell: shows and follows it
"""

from __future__ import annotations

import html
import threading
from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.client import Client, RunHeld
from zeroshot_kernel.ledger import LedgerError
from zeroshot_kernel.ledger.events import FailedResult, TerminalResult
from zeroshot_kernel.ledger.failure import explain_failure
from zeroshot_kernel.research.studies import round_in_progress, study_round_offset
from zeroshot_kernel.research.views import ResearchView
from zeroshot_widgets._poller import Poller
from zeroshot_widgets.feed import TAIL_LINES, Poll, RunFeed
from zeroshot_widgets.panels import MAX_ROWS, IncumbentCard, PlateauChart, RoundsTable
from zeroshot_widgets.run_info import RunInfo

INTERVAL_S = 1.0
STOP_MESSAGES = {
    "already_finished": "the run had already finished",
    "requested": "stop requested; the run's controller is closing it",
    "closed": "closed (no controller was running it)",
}
_PHASE_COLOURS = {"admitted": "#7f7f7f", "running": "#1f77b4", "stopping": "#ff7f0e",
                  "succeeded": "#2ca02c", "failed": "#d62728"}


class RunMonitor(widgets.VBox):  # type: ignore[misc]
    """A live view of one run; ``refresh()`` reads synchronously, ``start()``/``stop()``
    run the poller, which stops by itself once the run has ended.

    The Stop button stops the run (``failed/force_stopped``); ``stop()`` only stops
    polling.
    """

    def __init__(
        self,
        client: Client,
        run_id: str,
        *,
        interval_s: float = INTERVAL_S,
        autostart: bool = True,
        tail_lines: int = TAIL_LINES,
        max_rows: int = MAX_ROWS,
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.info = RunInfo.load(client.ledger, run_id, client.workspace)
        # The study's rounds before this run, read once: the label numbers the round in
        # progress study-wide, as the table does.
        self._offset = study_round_offset(client, run_id)
        self.interval_s = interval_s
        self._feed = RunFeed(client.ledger, run_id, tail_lines=tail_lines)
        self._lock = threading.Lock()
        self._poller: Poller | None = None
        self._last: Poll | None = None

        self.header = widgets.HTML(_header(self.info, run_id, client.display_url))
        self._cause: str | None = None
        self.phase_html = widgets.HTML()
        self.progress = widgets.IntProgress(min=0, max=self.info.round_limit or 1,
                                            description="rounds")
        self.progress_label = widgets.Label(layout=widgets.Layout(width="auto"))
        self.stop_button = widgets.Button(description="Stop", icon="stop",
                                          button_style="danger", tooltip="Stop the run")
        self.resume_button = widgets.Button(description="Resume", icon="play",
                                            tooltip="Start a controller for a run whose "
                                            "controller died")
        self.message = widgets.HTML()
        self.review_html = widgets.HTML()  # software-change: completion and review lifecycle
        self._graph = _gated_graph(client, run_id)
        self.chart = PlateauChart(metric=self.info.metric)
        self.card = IncumbentCard(metric=self.info.metric,
                                  layout=widgets.Layout(min_width="240px"))
        self.table = RoundsTable(max_rows=max_rows)
        self.log_tail = widgets.Textarea(disabled=True, layout=widgets.Layout(width="100%",
                                                                         height="14em"))
        self.stop_button.on_click(lambda _: self.stop_run())
        self.resume_button.on_click(lambda _: self.resume_run())
        log = widgets.Accordion(children=[self.log_tail], titles=("log",))
        self.research_panel = widgets.HBox([self.chart, self.card],
                                           layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__(children=[
            self.header,
            widgets.HBox([self.phase_html, self.progress, self.progress_label,
                          self.stop_button, self.resume_button]),
            self.message,
            self.review_html,
            self.research_panel,
            self.table,
            log,
        ])
        if not self.is_research:  # rounds, charts and evidence mean nothing for other graphs
            for part in (self.progress, self.progress_label, self.research_panel,
                         self.table):
                part.layout.display = "none"
            log.selected_index = 0
        self.refresh()
        if autostart:
            self.start()

    # -- reading ---------------------------------------------------------------------

    @property
    def view(self) -> ResearchView:
        return self._feed.view

    @property
    def is_research(self) -> bool:
        """An auto-research run (it has reviewed rounds to show)."""
        return self.info.round_limit is not None

    @property
    def phase(self) -> str:
        """``admitted``, ``running``, ``stopping`` or ``finished``."""
        return self._last.phase if self._last else "admitted"

    @property
    def terminal(self) -> TerminalResult | None:
        return self._last.terminal if self._last else None

    @property
    def polling(self) -> bool:
        return self._poller is not None and self._poller.alive

    def refresh(self) -> bool:
        """Read the new events and update the widgets; returns whether the run is live."""
        with self._lock:
            poll = self._feed.poll()
            first = self._last is None
            self._last = poll
            if poll.new_events or first:
                self._show(poll)
        return poll.terminal is None

    def start(self) -> RunMonitor:
        """Poll in a background thread until the run ends (no-op when it has ended)."""
        if self.terminal is None and not self.polling:
            self._poller = Poller(self._step, self.interval_s, name=f"monitor-{self.run_id}")
            self._poller.start()
        return self

    def stop(self) -> None:
        """Stop polling (the run goes on; see :meth:`stop_run`)."""
        if self._poller is not None:
            self._poller.stop()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the poller has ended (the run ended, or ``stop()``)."""
        if self._poller is not None:
            self._poller.join(timeout)

    def close(self) -> None:
        self.stop()
        super().close()

    # -- acting ----------------------------------------------------------------------

    def stop_run(self) -> str:
        """Stop the run (one atomic close as ``failed/force_stopped``) and follow it."""
        outcome = self.client.run(self.run_id).stop()
        self._say(STOP_MESSAGES[outcome])
        self.start()
        return outcome

    def resume_run(self) -> bool:
        """Start a controller for a run whose controller died; says why when it cannot."""
        if self.terminal is not None:
            self._say("the run has already finished")
            return False
        try:
            self.client.resume(self.run_id)
        except (RunHeld, LedgerError) as problem:
            self._say(str(problem), error=True)
            return False
        self._say("resumed: a new controller replays the run's history")
        self.start()
        return True

    # -- drawing (values only: safe from the poller thread) ---------------------------

    def _step(self) -> bool:
        try:
            return self.refresh()
        except Exception as problem:  # keep polling: a shared ledger may be briefly away
            self._say(f"could not read the ledger: {problem}", error=True)
            return True

    def _show(self, poll: Poll) -> None:
        view = self._feed.view
        status = _phase_text(poll)
        colour = _PHASE_COLOURS.get(poll.terminal.status if poll.terminal else poll.phase,
                                    "#7f7f7f")
        self.phase_html.value = (f'<span style="color:{colour};font-weight:bold">'
                                 f"{html.escape(status)}</span>{self._cause_html(poll)}")
        done = len(view.rounds)
        self.progress.max = max(self.info.round_limit or 1, done, 1)
        self.progress.value = done
        self.progress.bar_style = ("" if poll.terminal is None else
                                   "success" if poll.terminal.status == "succeeded" else "danger")
        self.progress_label.value = _progress_text(view, self.info.round_limit,
                                                   round_in_progress(view, self._offset))
        self.stop_button.disabled = poll.terminal is not None
        self.resume_button.disabled = poll.terminal is not None
        self.log_tail.value = self._feed.log_tail()
        if self._graph is not None and poll.new_events:
            self.review_html.value = _review_html(self._graph, self.client, self.run_id)
        self.card.update(view)
        self.table.update(view)
        self.chart.update(view)

    def _cause_html(self, poll: Poll) -> str:
        """Why a failed run failed (the failing node, its error, the worker's own last
        lines), read from the ledger once, when the run has ended."""
        if not isinstance(poll.terminal, FailedResult):
            return ""
        if self._cause is None:
            cause = explain_failure(event for _, event in self.client.run(self.run_id).events())
            self._cause = "" if cause is None or cause.node is None else (
                '<div style="font-family:monospace;white-space:pre-wrap">'
                + html.escape("\n".join(cause.lines())) + "</div>")
        return self._cause

    def _say(self, text: str, *, error: bool = False) -> None:
        colour = "#d62728" if error else "inherit"
        self.message.value = f'<span style="color:{colour}">{html.escape(text)}</span>'


def _gated_graph(client: Client, run_id: str) -> dict[str, Any] | None:
    """The run's graph when it has a review gate (only those show a completion decision)."""
    from zeroshot_kernel.review.ledger import GATE_WORKER, workers

    graph: dict[str, Any] = client.ledger.admitted(run_id)["graph"]
    return graph if any(ref == GATE_WORKER for _, ref in workers(graph["root"])) else None


def _review_html(graph: dict[str, Any], client: Client, run_id: str) -> str:
    """The recorded completion decision and review lifecycle (software-change runs)."""
    from zeroshot_kernel.review.ledger import review_lines

    lines = review_lines(graph, (event for _, event in client.run(run_id).events()))
    return "<br>".join(html.escape(line) for line in lines)


def _header(info: RunInfo, run_id: str, ledger: str) -> str:
    title = html.escape(info.title or run_id)
    note = (" · <b>runs inside this kernel</b> (restarting the kernel stops it)"
            if info.in_kernel else "")
    return (f"<b>{title}</b> · <code>{html.escape(run_id)}</code> · ledger "
            f"<code>{html.escape(ledger)}</code>{note}")


def _phase_text(poll: Poll) -> str:
    """The phase, or the result in a few words (the full output is in the log)."""
    if poll.terminal is None:
        return poll.phase
    if isinstance(poll.terminal, FailedResult):
        return f"failed: {poll.terminal.reason}"
    return "succeeded"


def _progress_text(view: ResearchView, limit: int | None, study_round: int) -> str:
    """This run's rounds against its limit; the round in progress by its study-wide
    number, as the rounds table numbers them."""
    done = len(view.rounds)
    text = f"{done} / {limit} rounds" if limit else f"{done} rounds"
    if view.terminal is None and limit is not None and done < limit:
        passes = view.passes_in_progress
        text += f" · round {study_round} in progress"
        text += f" (pass {passes + 1})" if passes else ""
    return text

