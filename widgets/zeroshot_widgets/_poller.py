"""A daemon thread that calls a step until it says stop: the monitors' poll loop.

The step runs off the main thread, so it may only set widget values (traitlets sync
from any thread); it must never ``display()`` or enter an ``Output`` context.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Poller:
    """Calls ``step`` every ``interval_s`` seconds until it returns False or ``stop()``."""

    def __init__(self, step: Callable[[], bool], interval_s: float, *, name: str) -> None:
        self._step = step
        self._interval_s = interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the loop to end and wait for it (unless called from the loop itself)."""
        self._stopped.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopped.is_set() and self._step():
            self._stopped.wait(self._interval_s)
