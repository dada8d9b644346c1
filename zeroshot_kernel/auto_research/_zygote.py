"""A warm interpreter that runs Python experiments (run as a script; standard library only).

Usage: ``python _zygote.py module ...``. It imports the modules once and says
``{"ready": true}`` on stdout, then reads one JSON request per line on stdin (``id``,
``script``, ``args``, ``cwd``, ``env``, ``log``, ``budget``) and forks a child for each
(``{"stop": id}`` kills that child's group: a pruned run). The
child becomes its own process group and runs the script as ``__main__`` with its output
appended to ``log``. The zygote enforces each child's budget itself (its whole group is
killed when the budget is over) and answers ``{"id", "exit", "timedOut", "seconds"}`` when
the child has ended, so it works the same inside a box, whose process ids its caller
cannot see. When stdin closes it kills whatever still runs and exits, so it never outlives
the process that started it.

A preload module that does not import is skipped (the experiment reports its own import
error). A script that fails because a package an extra of this distribution installs is
missing (scikit-learn, for the bundled tasks) says what to install in one line instead of
a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import runpy
import select
import signal
import sys
import time
import traceback
from typing import Any

INSTALL_HINTS = {
    "sklearn": ("scikit-learn", "pip install 'zeroshot-workbench[tasks]'"),
    "torch": ("torch", "pip install 'zeroshot-workbench[gpu]'"),
}
"""Packages the bundled tasks import that an extra of this distribution installs."""


class _Running:
    """One forked experiment: its request id, when it started and must end, and whether
    the budget ended it."""

    def __init__(self, ident: int, budget: float) -> None:
        self.ident = ident
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.timed_out = False


def main(preload: list[str]) -> None:
    for module in preload:
        with contextlib.suppress(Exception):  # the experiment reports its own import error
            importlib.import_module(module)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)  # a child's end wakes the select below
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _say({"ready": True})
    running: dict[int, _Running] = {}
    pending = b""
    reading = True
    while reading or running:
        waits = [wake_read, *([0] if reading else [])]
        deadlines = [r.deadline for r in running.values() if not r.timed_out]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        ready, _, _ = select.select(waits, [], [], timeout)
        if wake_read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 4096)
        if 0 in ready:
            chunk = os.read(0, 65536)
            if not chunk:
                reading = False
                _kill_all(running)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in filter(None, lines):
                request = json.loads(line)
                if "stop" in request:  # a pruned run: its whole group goes now
                    _stop(running, request["stop"])
                    continue
                pid = os.fork()
                if pid == 0:
                    _child(request)
                running[pid] = _Running(int(request["id"]), float(request["budget"]))
        _reap(running)
        now = time.monotonic()
        for pid, run in running.items():
            if not run.timed_out and now >= run.deadline:
                run.timed_out = True
                _kill_group(pid)


def _reap(running: dict[int, _Running]) -> None:
    """Answer for every child that has ended; what it left in its group goes with it."""
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        run = running.pop(pid, None)
        _kill_group(pid)
        if run is not None:
            _say(
                {
                    "id": run.ident,
                    "exit": os.waitstatus_to_exitcode(status),
                    "timedOut": run.timed_out,
                    "seconds": round(time.monotonic() - run.started, 4),
                }
            )


def _stop(running: dict[int, _Running], ident: object) -> None:
    """Kill the group of the run with request id ``ident``, if it still runs (it is
    answered for as it is reaped)."""
    for pid, run in running.items():
        if run.ident == ident:
            _kill_group(pid)


def _kill_all(running: dict[int, _Running]) -> None:
    for pid in running:
        _kill_group(pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _say(answer: dict[str, Any]) -> None:
    os.write(1, (json.dumps(answer) + "\n").encode())


def _child(request: dict[str, Any]) -> None:
    """Become ``python script args`` in a new process group; never returns."""
    code = 1
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["script"], *request["args"]]
        sys.path[0] = request["cwd"]
        random.seed()  # a fresh interpreter would not share the zygote's random state
        runpy.run_path(request["script"], run_name="__main__")
        code = 0
    except SystemExit as exit_request:
        if exit_request.code is None:
            code = 0
        elif isinstance(exit_request.code, int):
            code = exit_request.code
        else:
            print(exit_request.code, file=sys.stderr)
    except ModuleNotFoundError as error:
        hint = missing_package(error)
        if hint is None:
            traceback.print_exc()
        else:
            print(hint, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def missing_package(error: ModuleNotFoundError) -> str | None:
    """One line saying how to install the package ``error`` misses, if an extra does."""
    top = (error.name or "").split(".")[0]
    if top not in INSTALL_HINTS:
        return None
    package, command = INSTALL_HINTS[top]
    return f"this task needs {package} (module {top!r}), which is not installed: {command}"


if __name__ == "__main__":
    main(sys.argv[1:])
