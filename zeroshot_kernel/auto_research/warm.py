"""Warm starts for Python experiments whose imports dominate their run time.

Importing scikit-learn takes seconds; fitting a small model takes a fraction of one. A task
that declares ``preload`` modules runs its ``{python} script.py`` experiments as forks of a
warm interpreter (``_zygote.py``) that imported those modules once. Each experiment is still
a fresh process in its own process group, and the interpreter kills it at its budget.

In a box, a warm interpreter serves one candidate's measurement (one ``run_repeats`` call)
and ends with it: an interpreter shared across candidates would let one candidate's code
tamper with another's runs (trace it, write into its folder, leave a process behind).
Uncontained (``--sandbox none``), one interpreter serves each distinct (preload,
environment) pair for the life of this process, as before boxes.

Differences from a cold start, by design: the preloaded modules are already imported (with
the environment of the task that started the interpreter), and ``atexit`` handlers do not
run.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from zeroshot_kernel.processes import PIPE, Child
from zeroshot_kernel.sandbox import Box

_ZYGOTE = Path(__file__).with_name("_zygote.py")
_CLOSE_SECONDS = 2.0
_READY_SECONDS = 300.0
"""How long the preloaded imports may take."""
_ANSWER_GRACE_SECONDS = 10.0
"""How long past a run's budget the interpreter may take to answer before it is ended."""
WATCH_SECONDS = 0.05
"""How often a watched run's ``watch`` is called (see :meth:`WarmInterpreter.run`)."""


@dataclass(frozen=True)
class WarmEnd:
    """How one warm run ended (``exit_code`` ``None``: the interpreter ended first)."""

    timed_out: bool
    exit_code: int | None
    seconds: float
    problem: str = ""


class WarmInterpreter:
    """One warm interpreter started through ``box`` (which it owns), serving requests from
    any number of threads; its answers come back on a reader thread, in any order."""

    def __init__(self, preload: Sequence[str], box: Box, stderr: Path) -> None:
        self.box = box
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self._ready = self._ended = False
        self._ids = itertools.count(1)
        self._stderr = stderr
        with stderr.open("ab") as errors:
            self.child: Child = box.spawn(
                [sys.executable, _ZYGOTE, *preload],
                stdin=PIPE,
                stdout=PIPE,
                stderr=errors,
                text=True,
            )
        threading.Thread(target=self._read, name="warm-answers", daemon=True).start()
        with self._changed:
            self._changed.wait_for(lambda: self._ready or self._ended, _READY_SECONDS)
        if not self._ready:
            self.close()
            raise OSError(f"the warm interpreter did not start{self._last_error()}")

    @property
    def alive(self) -> bool:
        return not self._ended

    def run(
        self,
        script: str,
        args: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        log: Path,
        budget: float,
        watch: Callable[[], object] | None = None,
    ) -> WarmEnd:
        """Run ``script`` in a fork and wait for its end (or the interpreter's). ``watch``
        is called every :data:`WATCH_SECONDS` while it runs; once it returns something
        true, the fork's process group is killed (a pruned run) and its end awaited."""
        request: dict[str, object] = {
            "script": script,
            "args": list(args),
            "cwd": str(cwd),
            "env": dict(env),
            "log": str(log),
            "budget": budget,
        }
        started = time.monotonic()
        with self._lock:
            ident = request["id"] = next(self._ids)
            if not self._send(request):
                return WarmEnd(
                    False, None, 0.0, f"the warm interpreter is gone{self._last_error()}"
                )
        answered = self._await(ident, started + budget + _ANSWER_GRACE_SECONDS, watch)
        answer = self._answers.pop(ident, None)
        if answer is None:
            seconds = round(time.monotonic() - started, 4)
            if not answered:  # it stopped answering: nothing it runs can be trusted to end
                self.child.terminate()
                return WarmEnd(True, None, seconds, "the warm interpreter stopped answering")
            return WarmEnd(False, None, seconds, f"the warm interpreter ended{self._last_error()}")
        exit_code = answer.get("exit")
        return WarmEnd(
            bool(answer.get("timedOut")),
            exit_code if isinstance(exit_code, int) else None,
            float(answer.get("seconds") or 0.0),
        )

    def _send(self, request: Mapping[str, object]) -> bool:
        """Write one request (the caller holds the lock); ``False`` when it is gone."""
        try:
            stdin = self._stdin()
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def _await(self, ident: int, deadline: float, watch: Callable[[], object] | None) -> bool:
        """Wait for the answer to ``ident`` (or the interpreter's end) until ``deadline``,
        asking ``watch`` between waits whether to stop the run; ``False`` at the deadline."""
        stopping = False
        while True:
            remaining = deadline - time.monotonic()
            step = remaining if watch is None or stopping else min(WATCH_SECONDS, remaining)
            with self._changed:
                if self._changed.wait_for(
                    lambda: ident in self._answers or self._ended, max(0.0, step)
                ):
                    return True
            if remaining <= step:
                return False
            if watch is not None and not stopping and watch():
                stopping = True
                with self._lock:
                    self._send({"stop": ident})

    def close(self) -> None:
        """Closing its stdin ends the interpreter and what it runs; the box goes after."""
        with contextlib.suppress(OSError, ValueError):
            self._stdin().close()
        if self.child.wait(_CLOSE_SECONDS) is None:
            self.child.terminate()
        self.box.close()

    def _stdin(self) -> IO[str]:
        stdin = self.child.popen.stdin
        assert stdin is not None
        return stdin

    def _read(self) -> None:
        stdout = self.child.popen.stdout
        assert stdout is not None
        for line in stdout:
            try:
                answer = json.loads(line)
            except json.JSONDecodeError:
                continue
            with self._changed:
                if answer.get("ready") is True:
                    self._ready = True
                elif isinstance(answer.get("id"), int):
                    self._answers[answer["id"]] = answer
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def _last_error(self) -> str:
        try:
            lines = self._stderr.read_bytes()[-2000:].decode(errors="replace").strip()
        except OSError:
            return ""
        last = lines.splitlines()[-1:] if lines else []
        return f": {last[0][:300]}" if last else ""


_shared: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], WarmInterpreter] = {}
_shared_lock = threading.Lock()


def shared_interpreter(preload: Sequence[str], box: Box, stderr: Path) -> WarmInterpreter:
    """The uncontained warm interpreter for ``preload`` and ``box``'s environment, started
    once per process (``box`` must be uncontained: a boxed one serves one candidate)."""
    assert not box.contained
    key = (tuple(preload), tuple(sorted(box.env.items())))
    with _shared_lock:
        found = _shared.get(key)
        if found is None or not found.alive:
            found = _shared[key] = WarmInterpreter(preload, box, stderr)
    return found


@atexit.register
def _close_shared() -> None:
    for interpreter in _shared.values():
        interpreter.close()
