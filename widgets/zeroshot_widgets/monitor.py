"""``RunMonitor``: one run, live: phase, rounds, log tail, chart, evidence, Stop, Resume
and Continue.

Everything is read from the ledger through a cursor (:class:`RunFeed`), so a monitor on a
finished run, on a run the CLI started, or on a run in a shared ledger looks the same as
one on a run launched from this notebook. The poller thread only sets widget values.

Displayed (``display(monitor)``, the last line of a cell, ``%zeroshot monitor``), a
monitor also leaves a static snapshot in the cell's output: its mime bundle carries a
``text/html`` and an ``image/png`` rendering next to the widget, and once the run has
ended (and there is nothing left to act on) the output is replaced by that snapshot alone,
so a notebook reopened without its kernel shows the run's last state, not "model not
found". While the run is live the view sends a heartbeat; a view left behind by a
restarted kernel stops receiving it, greys out its buttons and says so.

Example::

    from zeroshot_kernel.client import Client
    from zeroshot_widgets import RunMonitor

    RunMonitor(Client(), "run-abcdefghijkl")     # last line of a cell: shows and follows it
"""

from __future__ import annotations

import base64
import html
import secrets
import threading
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.auto_research.continuation import continuation_options, study_history
from zeroshot_kernel.auto_research.run_feed import TAIL_LINES, Poll, RunFeed
from zeroshot_kernel.auto_research.run_info import RunInfo
from zeroshot_kernel.auto_research.run_words import STOP_MESSAGES, phase_key, study_progress
from zeroshot_kernel.auto_research.run_words import phase_text as _phase_text
from zeroshot_kernel.auto_research.run_words import progress_text as _progress_text
from zeroshot_kernel.auto_research.studies.catalog import (
    candidates_in_flight,
    in_flight_text,
    round_in_progress,
    study_round_offset,
)
from zeroshot_kernel.auto_research.views import ResearchView
from zeroshot_kernel.client import Client, RunHeld
from zeroshot_kernel.exceptions import ZeroshotError
from zeroshot_kernel.ledger import LedgerError
from zeroshot_kernel.ledger.events import FailedResult, TerminalResult, was_stopped
from zeroshot_kernel.ledger.failure import explain_failure
from zeroshot_kernel.templates import expand_template
from zeroshot_widgets._poller import Poller
from zeroshot_widgets.charts import plateau_png
from zeroshot_widgets.evidence_table import rounds_table_html, scrolling_box
from zeroshot_widgets.panels import MAX_ROWS, IncumbentCard, PlateauChart, RoundsTable

__all__ = [
    "RUN_MIME",
    "STOP_MESSAGES",
    "RunMonitor",
    "continuation_options",
    "study_history",
]

INTERVAL_S = 1.0
RUN_MIME = "application/vnd.zeroshot.run+json"
"""The output a JupyterLab front end with the zeroshot extension renders live from the
ledger, through the Jupyter server (no kernel needed): ``{"run_id", "workspace"}``."""
_PHASE_COLOURS = {
    "admitted": "#7f7f7f",
    "running": "#1f77b4",
    "stopping": "#ff7f0e",
    "succeeded": "#2ca02c",
    "failed": "#d62728",
    "stopped": "#555555",
}
STALE_AFTER_S = 10.0
"""A live view that has not heard from its kernel for this long (plus three poll
intervals) greys out its buttons and says the live view has ended."""
SNAPSHOT_MIME = ("text/html", "image/png")


class RunMonitor(widgets.VBox):  # type: ignore[misc]
    """A live view of one run; ``refresh()`` reads synchronously, ``start()``/``stop()``
    run the poller, which stops by itself once the run has ended (a stopped research
    run's view keeps its heartbeat while it offers Continue).

    The Stop button stops the run (``failed/force_stopped``, shown as "stopped");
    ``stop()`` only stops polling. Continue, offered once a run was stopped, starts a new
    run on the same study (same task, harness and model; the rounds it had left) and
    follows that one instead.
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
        self.info = RunInfo.load(client, run_id, client.workspace)
        # The study's rounds before this run, read once: the label numbers the round in
        # progress study-wide, as the table does.
        self._offset = study_round_offset(client, client.workspace, run_id)
        self.interval_s = interval_s
        self._tail_lines = tail_lines
        self._feed = RunFeed(
            client, run_id, tail_lines=tail_lines, earlier=study_history(client, run_id)
        )
        self._lock = threading.Lock()
        self._poller: Poller | None = None
        self._ended = threading.Event()
        """Set once the view shows the run's end (or polling was stopped): ``join``."""
        self._last: Poll | None = None
        self._token = secrets.token_hex(4)
        self._display_id: str | None = None
        """Set once displayed through IPython: the output the snapshot replaces."""
        self._published: str | None = None
        """The run whose terminal snapshot was published (once per run)."""
        self._beats = 0

        self.header = widgets.HTML(_header(self.info, run_id, client.display_url))
        self._cause: str | None = None
        self.phase_html = widgets.HTML()
        self.progress = widgets.IntProgress(
            min=0, max=self.info.round_limit or 1, description="rounds"
        )
        self.progress_label = widgets.Label(layout=widgets.Layout(width="auto"))
        self.stop_button = widgets.Button(
            description="Stop", icon="stop", button_style="danger", tooltip="Stop the run"
        )
        self.resume_button = widgets.Button(
            description="Resume",
            icon="play",
            tooltip="Start a controller for a run whose controller died",
        )
        self.continue_button = widgets.Button(
            description="Continue",
            icon="forward",
            button_style="primary",
            tooltip="Start a new run on the same study (same task, harness and model; the "
            "rounds this run had left) and follow it here",
        )
        self.continue_button.layout.display = "none"
        self.message = widgets.HTML()
        self.liveness = widgets.HTML()  # the heartbeat: see _heartbeat_html
        self.review_html = widgets.HTML()  # software-change: completion and review lifecycle
        self._graph = _gated_graph(client, run_id)
        self.chart = PlateauChart(metric=self.info.metric)
        self.card = IncumbentCard(metric=self.info.metric, layout=widgets.Layout(min_width="240px"))
        self.table = RoundsTable(max_rows=max_rows)
        self.log_tail = widgets.Textarea(
            disabled=True, layout=widgets.Layout(width="100%", height="14em")
        )
        self.stop_button.on_click(lambda _: self.stop_run())
        self.resume_button.on_click(lambda _: self.resume_run())
        self.continue_button.on_click(lambda _: self.continue_run())
        for button in (self.stop_button, self.resume_button, self.continue_button):
            button.add_class("zeroshot-live-only")
        log = widgets.Accordion(children=[self.log_tail], titles=("log",))
        self.research_panel = widgets.HBox(
            [self.chart, self.card], layout=widgets.Layout(flex_flow="row wrap")
        )
        super().__init__(
            children=[
                self.header,
                widgets.HBox(
                    [
                        self.phase_html,
                        self.progress,
                        self.progress_label,
                        self.stop_button,
                        self.resume_button,
                        self.continue_button,
                    ]
                ),
                self.liveness,
                self.message,
                self.review_html,
                self.research_panel,
                self.table,
                log,
            ]
        )
        self.add_class(f"zeroshot-monitor-{self._token}")
        if not self.is_research:  # rounds, charts and evidence mean nothing for other graphs
            for part in (self.progress, self.progress_label, self.research_panel, self.table):
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
    def stopped(self) -> bool:
        """The run ended because someone stopped it (Stop, ``zeroshot stop``)."""
        return was_stopped(self.terminal)

    @property
    def continuable(self) -> bool:
        """An auto-research run that was stopped: Continue can carry its study on."""
        return self.is_research and self.stopped

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
        """Poll in a background thread until the run ends (no-op when it has ended), and
        beat on while Continue is on offer, so a view whose kernel is gone greys it out."""
        if (self.terminal is None or self.continuable) and not self.polling:
            if self.terminal is None:
                self._ended.clear()
            self._poller = Poller(self._step, self.interval_s, name=f"monitor-{self.run_id}")
            self._poller.start()
        return self

    def stop(self) -> None:
        """Stop polling (the run goes on; see :meth:`stop_run`)."""
        if self._poller is not None:
            self._poller.stop()
        self._ended.set()
        self.liveness.value = ""

    def join(self, timeout: float | None = None) -> None:
        """Wait until the view shows the run's end (at once when nothing polls it)."""
        if self.polling:
            self._ended.wait(timeout)

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

    def continue_run(self) -> str | None:
        """Start a new run on the stopped run's study (the auto-research template with the
        same study, task, harness, provider and model, for the rounds the stopped run had
        left), as ``zeroshot research run TASK --study STUDY`` would, and follow it here.
        Returns the new run's id, or None (saying why) when it cannot."""
        if not self.continuable:
            self._say("only a stopped auto-research run can be continued", error=True)
            return None
        left = max((self.info.round_limit or 1) - len(self.view.run_rounds), 1)
        try:
            options = continuation_options(self.client.admitted(self.run_id), iterations=left)
            expansion = expand_template("auto-research", options)
            run = self.client.submit(
                expansion.graph,
                input=expansion.input,
                runtime=expansion.runtime,
                title=self.info.title or f"auto-research {options.task}",
            )
        except (ZeroshotError, ValueError) as problem:  # admission, study, ledger refusals
            self._say(f"could not continue: {problem}", error=True)
            return None
        previous = self.run_id
        self.attach(run.id)
        self._say(
            f"continued study {options.study} as {run.id} (after {previous}, "
            f"{left} round{'s' if left != 1 else ''})"
        )
        return run.id

    def attach(self, run_id: str) -> RunMonitor:
        """Follow another run in this same view (and in its displayed output), after the
        rounds its study already had (see :func:`study_history`)."""
        self.stop()
        with self._lock:
            self.run_id = run_id
            self.info = RunInfo.load(self.client, run_id, self.client.workspace)
            self._offset = study_round_offset(self.client, self.client.workspace, run_id)
            self._feed = RunFeed(
                self.client,
                run_id,
                tail_lines=self._tail_lines,
                earlier=study_history(self.client, run_id),
            )
            self._last = None
            self._cause = None
            self.chart.reset(metric=self.info.metric)
            self.card.reset(metric=self.info.metric)
            self.table.reset()
            self.message.value = ""
        self.header.value = _header(self.info, run_id, self.client.display_url)
        self.refresh()
        return self.start()

    # -- the static snapshot (what stays in the output without a kernel) -------------

    def snapshot_html(self, *, live: bool | None = None) -> str:
        """The monitor's state as one static HTML block (chart embedded as a PNG): what a
        front end shows where the live view cannot be (no kernel, no widget manager)."""
        with self._lock:
            return self._snapshot_html(self.terminal is None if live is None else live)

    def snapshot_bundle(self, *, widget: bool = True) -> dict[str, Any]:
        """The display bundle: the widget view (unless ``widget`` is false) with the static
        snapshot as its ``text/html`` and ``image/png`` alternatives."""
        with self._lock:
            return self._bundle(widget=widget)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            with self._lock:
                data.update(
                    {k: v for k, v in self._bundle(widget=False).items() if k in SNAPSHOT_MIME}
                )
                data[RUN_MIME] = self._run_ref()
        return data

    def _ipython_display_(self) -> None:
        """Display the live view under a display id, so the terminal snapshot can take
        its place in the output when the run ends."""
        from IPython.display import display

        self._display_id = self._display_id or f"zeroshot-monitor-{self._token}"
        with self._lock:
            finished = self.terminal is not None and not self.continuable
            bundle = self._bundle(widget=not finished)
            if finished:
                self._published = self.run_id
        display(bundle, raw=True, display_id=self._display_id)  # type: ignore[no-untyped-call]

    # -- drawing (values only: safe from the poller thread) ---------------------------

    def _step(self) -> bool:
        """One poll (none once the run has ended: nothing more is written) and one beat;
        True while the view has something live: the run, or the Continue button."""
        try:
            live = self.terminal is None and self.refresh()
        except Exception as problem:  # keep polling: a shared ledger may be briefly away
            self._say(f"could not read the ledger: {problem}", error=True)
            live = True
        beating = live or self.continuable
        self._beats += 1
        self.liveness.value = (
            _heartbeat_html(
                self._token, self._beats, self.run_id, STALE_AFTER_S + 3 * self.interval_s
            )
            if beating
            else ""
        )
        return beating

    def _show(self, poll: Poll) -> None:
        view = self._feed.view
        self.phase_html.value = _phase_html(poll)
        self.header.value = _header(
            self.info, self.run_id, self.client.display_url
        ) + self._cause_html(poll)
        done, limit = study_progress(view, self.info.round_limit, self._offset)
        self.progress.max = max(limit or 1, done, 1)
        self.progress.value = done
        self.progress.bar_style = (
            ""
            if poll.terminal is None or was_stopped(poll.terminal)
            else "success"
            if poll.terminal.status == "succeeded"
            else "danger"
        )
        active = round_in_progress(view, self._offset)
        in_flight = (
            candidates_in_flight(self.client, self.client.workspace, self.run_id, active)
            if self.is_research and poll.terminal is None
            else []
        )  # several with --parallel
        self.progress_label.value = _progress_text(
            view, self.info.round_limit, active, self._offset
        ) + in_flight_text(in_flight)
        self.stop_button.disabled = poll.terminal is not None
        self.resume_button.disabled = poll.terminal is not None
        continuable = self.is_research and was_stopped(poll.terminal)
        self.continue_button.layout.display = None if continuable else "none"
        if poll.terminal is not None and self._stop_requested():
            self.message.value = ""  # the stop happened: the phase says "stopped"
        self.log_tail.value = self._feed.log_tail()
        if self._graph is not None and poll.new_events:
            self.review_html.value = _review_html(self._graph, self.client, self.run_id)
        self.card.update(view)
        self.table.update(view)
        self.chart.update(view)
        if poll.terminal is not None:
            if not continuable:
                self.liveness.value = ""
            self._publish_snapshot()
            self._ended.set()

    def _stop_requested(self) -> bool:
        return html.escape(STOP_MESSAGES["requested"]) in self.message.value

    def _publish_snapshot(self) -> None:
        """Once per run, at its end: put the terminal snapshot in the displayed output
        (alone, unless Continue is still on offer). ``update_display`` is routed by its
        display id, so the poller thread may send it whichever cell is running."""
        if self._display_id is None or self._published == self.run_id:
            return
        self._published = self.run_id
        from IPython.display import update_display

        update_display(
            self._bundle(widget=self.continuable),
            raw=True,  # type: ignore[no-untyped-call]
            display_id=self._display_id,
        )

    def _bundle(self, *, widget: bool) -> dict[str, Any]:
        live = self.terminal is None
        png = plateau_png(self.view, metric=self.info.metric) if self.is_research else None
        bundle: dict[str, Any] = {
            "text/plain": f"RunMonitor({self.run_id}): {self._status_text()}",
            "text/html": self._snapshot_html(live, png),
        }
        if png is not None:
            bundle["image/png"] = base64.b64encode(png).decode("ascii")
        bundle[RUN_MIME] = self._run_ref()
        if widget and self._view_name is not None:
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self._model_id,
            }
        return bundle

    def _run_ref(self) -> dict[str, str]:
        """The run mime's data: which run, in which workspace's ledger (absolute), so the
        Lab front end renders it live whether or not this kernel is still there."""
        return {"run_id": self.run_id, "workspace": str(Path(self.client.workspace).resolve())}

    def _status_text(self) -> str:
        status = _phase_text(self._last) if self._last else "admitted"
        return f"{status} · {self.progress_label.value}" if self.is_research else status

    def _snapshot_html(self, live: bool, png: bytes | None = None) -> str:
        """Header, status, failure reason, chart, incumbent, rounds (scrolling, newest
        first) and the log tail folded: all static."""
        if live:
            note = (
                "live view ended: this is the state when the cell was displayed. "
                "Re-run the cell or <code>%zeroshot monitor "
                f"{html.escape(self.run_id)}</code> to follow the run again."
            )
        else:
            note = (
                "a static snapshot of the run's end (it needs no kernel); "
                f"<code>%zeroshot monitor {html.escape(self.run_id)}</code> reads it "
                "from the ledger again."
            )
        parts = [
            f'<div class="zeroshot-snapshot" style="font-family:var(--jp-ui-font-family,'
            f'sans-serif);font-size:13px">{self.header.value}',
            f"<div>{self.phase_html.value} · {html.escape(self.progress_label.value)}</div>"
            if self.is_research
            else f"<div>{self.phase_html.value}</div>",
            f'<div style="color:#7f7f7f;font-size:12px">{note}</div>',
        ]
        if self.is_research:
            png = png if png is not None else plateau_png(self.view, metric=self.info.metric)
            image = base64.b64encode(png).decode("ascii")
            parts += [
                f'<img alt="plateau chart" style="max-width:820px;width:100%" '
                f'src="data:image/png;base64,{image}">',
                self.card.value,
                scrolling_box(rounds_table_html(self.table.rows)),
            ]
        parts.append(
            '<details><summary>log</summary><pre style="font-size:11px;'
            f'white-space:pre-wrap">{html.escape(self.log_tail.value)}</pre></details>'
            "</div>"
        )
        return "".join(parts)

    def _cause_html(self, poll: Poll) -> str:
        """Why a failed run failed (the failing node, its error, the worker's own last
        lines), read from the ledger once, when the run has ended."""
        if not isinstance(poll.terminal, FailedResult) or was_stopped(poll.terminal):
            return ""
        if self._cause is None:
            cause = explain_failure(event for _, event in self.client.run(self.run_id).events())
            self._cause = (
                ""
                if cause is None or cause.node is None
                else (
                    '<div style="font-family:monospace;white-space:pre-wrap">'
                    + html.escape("\n".join(cause.lines()))
                    + "</div>"
                )
            )
        return self._cause

    def _say(self, text: str, *, error: bool = False) -> None:
        colour = "#d62728" if error else "inherit"
        self.message.value = f'<span style="color:{colour}">{html.escape(text)}</span>'


def _gated_graph(client: Client, run_id: str) -> dict[str, Any] | None:
    """The run's graph when it has a review gate (only those show a completion decision)."""
    from zeroshot_kernel.software_change.review.ledger import GATE_WORKER, workers

    graph: dict[str, Any] = client.admitted(run_id)["graph"]
    return graph if any(ref == GATE_WORKER for _, ref in workers(graph["root"])) else None


def _review_html(graph: dict[str, Any], client: Client, run_id: str) -> str:
    """The recorded completion decision and review lifecycle (software-change runs)."""
    from zeroshot_kernel.software_change.review.ledger import review_lines

    lines = review_lines(graph, (event for _, event in client.run(run_id).events()))
    return "<br>".join(html.escape(line) for line in lines)


def _header(info: RunInfo, run_id: str, ledger: str) -> str:
    title = html.escape(info.title or run_id)
    note = (
        " · <b>runs inside this kernel</b> (restarting the kernel stops it)"
        if info.in_kernel
        else ""
    )
    return (
        f"<b>{title}</b> · <code>{html.escape(run_id)}</code> · ledger "
        f"<code>{html.escape(ledger)}</code>{note}"
    )


def _phase_html(poll: Poll) -> str:
    colour = _PHASE_COLOURS.get(phase_key(poll), "#7f7f7f")
    return f'<span style="color:{colour};font-weight:bold">{html.escape(_phase_text(poll))}</span>'


def _heartbeat_html(token: str, beat: int, run_id: str, stale_after_s: float) -> str:
    """A style that greys out the view's Stop, Resume and Continue and shows a note once
    ``stale_after_s`` pass without the next beat. Each beat renames the animations, which
    restarts them: a view whose kernel went away (restarted, shut down) stops beating.
    ``step-start``, not ``step-end``: a finished animation's progress can stop a rounding
    error short of 1, where a step at the end never applies its keyframe."""
    scope, name = f".zeroshot-monitor-{token}", f"zs-stale-{token}-{beat % 2}"
    timing = f"0.01s step-start {stale_after_s:g}s forwards"
    return (
        "<style>"
        # the note says the view is disconnected: no ipywidgets marker on every part
        f"{scope}.jupyter-widgets-disconnected::before,"
        f"{scope} .jupyter-widgets-disconnected::before {{content:none;display:none}}"
        f"{scope} .zeroshot-live-only {{animation:{name}-off {timing}}}"
        f"{scope} .zeroshot-stale-note {{max-height:0;overflow:hidden;visibility:hidden;"
        f"animation:{name}-on {timing}}}"
        f"@keyframes {name}-off {{to {{opacity:0.3;pointer-events:none}}}}"
        f"@keyframes {name}-on {{to {{max-height:6em;visibility:visible}}}}"
        "</style>"
        '<div class="zeroshot-stale-note" style="color:#7f7f7f">live view ended: the kernel '
        "no longer updates it. Re-run the cell or <code>%zeroshot monitor "
        f"{html.escape(run_id)}</code>.</div>"
    )
