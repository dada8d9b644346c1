"""Following a run from the terminal: notice, within seconds, that nobody drives it.

A foreground ``run``, ``research run``, ``change run``, ``watch`` or ``resume`` would
otherwise wait forever on a run whose controller was killed. :class:`ControllerWatch`
asks the ledger (and the controller process this command started, if any) now and then,
and ends the command with exit status 3 and what to do.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from zeroshot_kernel.client import Run

EXIT_CONTROLLER_GONE = 3
CHECK_EVERY_S = 1.0
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
                f"error: the controller of {self._run.id} stopped ({state.why}); the run "
                f"is unfinished: resume it with `zeroshot resume {self._run.id}`",
                err=True,
            )
            raise typer.Exit(EXIT_CONTROLLER_GONE)


def print_failure_cause(run: Run) -> None:
    """A failed run's cause (failing node, error, detail, the worker's last error lines)."""
    from zeroshot_kernel.console.output import printable
    from zeroshot_kernel.ledger.failure import explain_failure

    cause = explain_failure(event for _, event in run.events())
    if cause is not None and cause.node is not None:
        for line in cause.lines():
            typer.echo(printable(line))
