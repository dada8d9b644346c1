"""Following a run from the terminal: notice, within seconds, that nobody drives it, and
detach at once on Ctrl-C.

A foreground ``run``, ``research run``, ``change run``, ``watch`` or ``resume`` would
otherwise wait forever on a run whose controller was killed. :class:`ControllerWatch`
asks the ledger (and the controller process this command started, if any) now and then,
and ends the command with exit status 3 and what to do.

:func:`follow` reads the ledger on a thread of its own and prints on the main thread,
where Ctrl-C is only a flag: a ledger read blocked on a busy lock, or library code that
swallows ``KeyboardInterrupt``, can neither delay nor lose the detach.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

from zeroshot_kernel.console.output import printable

if TYPE_CHECKING:
    from zeroshot_kernel.client import Run

EXIT_CONTROLLER_GONE = 3
EXIT_DETACHED = 130
CHECK_EVERY_S = 1.0
WAKE_EVERY_S = 0.05
"""How often the printing thread looks at the Ctrl-C flag while no line arrives."""
GONE_GRACE_S = 2.0
"""A controller must look gone this long before the follower says so (a resume started
elsewhere needs a moment to take the lease)."""


class ControllerWatch:
    def __init__(self, run: Run) -> None:
        self._run = run
        self._checked = time.monotonic()
        self._gone_since: float | None = None

    def check(self) -> None:
        """Exit 3 with the resume hint once the run's controller has been gone a while."""
        now = time.monotonic()
        if now - self._checked < CHECK_EVERY_S:
            return
        self._checked = now
        state = self._run.controller()
        if state.phase != "gone":
            self._gone_since = None
            return
        self._gone_since = self._gone_since or now
        if now - self._gone_since >= GONE_GRACE_S:
            typer.echo(
                printable(
                    f"error: the controller of {self._run.id} stopped ({state.why})"
                    f"{self._final_word()}; the run is unfinished: resume it with "
                    f"`zeroshot resume {self._run.id}`"
                ),
                err=True,
            )
            raise typer.Exit(EXIT_CONTROLLER_GONE)

    def _final_word(self) -> str:
        """What the controller logged as it stopped (the ledger that failed under it, say),
        when its log ends with that."""
        from zeroshot_kernel.engine.controller_main import STOPPED
        from zeroshot_kernel.engine.launch import last_log_line

        last = last_log_line(self._run.client.workspace, self._run.id)
        return f": {last}" if last is not None and STOPPED in last else ""


def failure_lines(run: Run) -> list[str]:
    """A failed run's cause (failing node, error, detail, the worker's last error lines)."""
    from zeroshot_kernel.ledger.failure import explain_failure

    cause = explain_failure(event for _, event in run.events())
    if cause is None or cause.node is None:
        return []
    return [printable(line) for line in cause.lines()]


def print_failure_cause(run: Run) -> None:
    """Print :func:`failure_lines`."""
    for line in failure_lines(run):
        typer.echo(line)


Shown = tuple[str, str | None]
"""A line to print, and the cursor a reader has seen once it is printed (None: no new one)."""


@dataclass
class _End:
    raised: BaseException | None


def follow(lines: Iterator[Shown], detached: Callable[[str | None], str]) -> None:
    """Print ``lines`` until they end, raising what their producer raised (``typer.Exit``
    with the run's exit status). On Ctrl-C print ``detached(last cursor printed)`` to
    stderr and exit 130 at once, whatever the producer is doing."""
    shown: queue.Queue[Shown | _End] = queue.Queue(maxsize=1000)

    def produce() -> None:
        try:
            for line in lines:
                shown.put(line)
        except BaseException as raised:  # handed to the main thread, which raises it
            shown.put(_End(raised))
        else:
            shown.put(_End(None))

    last: str | None = None
    with _interrupt_flag() as interrupted:
        threading.Thread(target=produce, name="zeroshot-follow", daemon=True).start()
        while not interrupted.is_set():
            try:
                item = shown.get(timeout=WAKE_EVERY_S)
            except queue.Empty:
                continue
            if isinstance(item, _End):
                if item.raised is not None:
                    raise item.raised
                return
            text, cursor = item
            typer.echo(text)
            last = cursor or last
        typer.echo(detached(last), err=True)
        raise typer.Exit(EXIT_DETACHED)


@contextlib.contextmanager
def _interrupt_flag() -> Iterator[threading.Event]:
    """SIGINT sets the flag instead of raising ``KeyboardInterrupt`` (the handler only sets
    it: nothing the main thread holds can block it); the previous handler comes back
    after. Off the main thread (no handler can be set there) the flag stays clear."""
    flag = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        flag.set()

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield flag
        return
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
