"""One run read through a cursor: each poll costs the new events, not the run's length.

``RunFeed`` is the non-UI half of a monitor (the widget's and the Jupyter server
extension's: it lives here, not with the widgets, so the server never imports them). It
keeps the last cursor, folds new events into a :class:`ResearchViewBuilder`, and keeps a
bounded tail of the same lines ``zeroshot watch`` prints, so a monitor's refresh stays
flat as a run grows to 1,000 rounds.

Example::

    feed = RunFeed(client, run_id)
    while feed.poll().terminal is None:
        time.sleep(1)
    print(feed.view.incumbent, feed.log_tail())
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from zeroshot_kernel.auto_research.views import ResearchView, ResearchViewBuilder, RoundView
from zeroshot_kernel.console.event_lines import EventRenderer
from zeroshot_kernel.ledger import RunSnapshot
from zeroshot_kernel.ledger.events import TerminalResult
from zeroshot_kernel.ledger.reader import RunReader

TAIL_LINES = 200


@dataclass(frozen=True)
class Poll:
    """What one poll found."""

    new_events: int
    rounds_added: int
    phase: str
    """``admitted``, ``running``, ``stopping`` (a stop was requested) or ``finished``."""
    terminal: TerminalResult | None


class RunFeed:
    """Follows one run in a ledger; not thread-safe (a monitor serialises its polls)."""

    def __init__(
        self,
        ledger: RunReader,
        run_id: str,
        *,
        tail_lines: int = TAIL_LINES,
        earlier: Sequence[RoundView] = (),
    ) -> None:
        """``earlier``: the rounds of the study's earlier runs that the view starts with
        (a continued run)."""
        self.ledger = ledger
        self.run_id = run_id
        self.cursor: str | None = None
        self.snapshot: RunSnapshot | None = None
        self._builder = ResearchViewBuilder.after(earlier)
        self._renderer = EventRenderer()
        self._tail: deque[str] = deque(maxlen=tail_lines)
        self.view: ResearchView = self._builder.view()

    def poll(self) -> Poll:
        """Read the events after the cursor and fold them in."""
        snapshot, events = self.ledger.snapshot_and_tail(self.run_id, self.cursor)
        self.snapshot = snapshot
        self.cursor = snapshot.cursor
        before = len(self.view.rounds)
        if events:
            self._builder.feed(event for _, event in events)
            self._tail.extend(self._renderer.line(c, e) for c, e in events)
            self.view = self._builder.view()
        return Poll(
            new_events=len(events),
            rounds_added=len(self.view.rounds) - before,
            phase=_phase(snapshot),
            terminal=snapshot.terminal,
        )

    def log_tail(self) -> str:
        """The last lines of the run's events and worker output, oldest first."""
        return "\n".join(self._tail)


def _phase(snapshot: RunSnapshot) -> str:
    if snapshot.terminal is None and snapshot.force_stop_requested:
        return "stopping"
    return snapshot.phase
