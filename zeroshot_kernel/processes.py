"""Child processes: started in a session of their own, killed with what they started, reaped.

Every process the workbench starts (pooled Python workers, agent CLIs, git, warm
interpreters and their experiments, notebook executions, detached controllers) goes
through :func:`spawn` or :func:`spawn_async`. With ``own_group`` (the default) the child
leads a new session, so it and everything it starts form one process group:
:meth:`Child.terminate` ends them all (``SIGTERM``, then ``SIGKILL`` after a grace period)
and reaps the leader, and a terminal's Ctrl-C or a closed notebook does not reach them.

The rest is what those call sites shared: an environment built from an allow-list
(:func:`allowed_env`), killing a group by id (:func:`kill_group`), waiting for a process
that is not our child (:func:`wait_exit`), reading a pipe line by line without holding
more than a line (:func:`read_lines`), and a child dying with its parent
(:func:`die_with_parent`). Scripts that must stay standard-library-only (the agent guard,
the warm interpreter) keep their own few lines for the same things.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

LINE_LIMIT = 64 * 1024 * 1024
"""The longest line an asyncio child's pipe reader accepts (one line may carry an output)."""
PARENT_POLL_S = 0.2
EXIT_POLL_S = 0.05
_PID_POLL_S = 0.01

DEVNULL = subprocess.DEVNULL
PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT

Stream = int | IO[Any] | None


def allowed_env(names: Iterable[str], values: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's variables named in ``names`` (when set), then ``values``: a child's
    environment that carries none of the parent's other variables (its secrets)."""
    env = {name: os.environ[name] for name in names if name in os.environ}
    env.update(values or {})
    return env


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to process group ``pgid``; ``False`` when there is none (any more)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal(pid: int, own_group: bool, sig: int) -> None:
    if own_group:
        kill_group(pid, sig)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def wait_exit(pid: int, timeout: float) -> bool:
    """Wait until process ``pid`` (not necessarily our child) has exited; ``False`` at the
    timeout. Uses a pidfd where the platform has one, else polls."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):  # no pidfd on this platform: poll instead
        return _poll_exit(pid, timeout)
    try:
        ready, _, _ = select.select([handle], [], [], timeout)
        return bool(ready)
    finally:
        os.close(handle)


def _poll_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_PID_POLL_S)


def die_with_parent(poll_s: float = PARENT_POLL_S) -> None:
    """In a child: when its parent is gone (however it died, even by ``SIGKILL``), kill this
    process's whole group. An orphan is re-parented, so a thread watches the parent pid."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class Child:
    """A started child process (see :func:`spawn`); ``popen`` is the underlying handle."""

    def __init__(self, popen: subprocess.Popen[Any], *, own_group: bool) -> None:
        self.popen = popen
        self.own_group = own_group

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or ``None`` if the child is still running after ``timeout``."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, grace_s: float = 0.0) -> int:
        """End the child and its group: ``SIGTERM`` and up to ``grace_s`` to exit, then
        ``SIGKILL`` (also for stragglers the leader left behind); returns the exit code."""
        if grace_s > 0 and self.popen.poll() is None:
            _signal(self.pid, self.own_group, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(grace_s)
        _signal(self.pid, self.own_group, signal.SIGKILL)
        return self.popen.wait()


def spawn(
    argv: Sequence[str | Path],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: Stream = DEVNULL,
    stdout: Stream = None,
    stderr: Stream = None,
    text: bool = False,
    own_group: bool = True,
    preexec: Callable[[], None] | None = None,
) -> Child:
    """Start ``argv`` (no shell); ``own_group`` makes it the leader of a new session.
    ``env`` replaces the environment when given; ``preexec`` runs in the child before it
    executes (a box's limits). Raises ``OSError`` when it cannot start."""
    popen = subprocess.Popen(
        [str(part) for part in argv],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        text=text,
        start_new_session=own_group,
        close_fds=True,
        preexec_fn=preexec,
    )
    return Child(popen, own_group=own_group)


class AsyncChild:
    """A child started by :func:`spawn_async`; ``process`` is the asyncio handle."""

    def __init__(self, process: asyncio.subprocess.Process, *, own_group: bool) -> None:
        self.process = process
        self.own_group = own_group

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def exited(self) -> int:
        """The leader's exit code as soon as it exits (``Process.wait`` also waits for
        every pipe to close, which a straggler holding one could put off indefinitely)."""
        waiter = asyncio.ensure_future(self.process.wait())
        try:
            while self.process.returncode is None and not waiter.done():
                await asyncio.wait({waiter}, timeout=EXIT_POLL_S)
        finally:
            waiter.cancel()
        assert self.process.returncode is not None
        return self.process.returncode

    async def terminate(self, grace_s: float = 0.0) -> int:
        """End the child and its group: ``SIGTERM`` and up to ``grace_s`` to exit, then
        ``SIGKILL`` (also for stragglers the leader left behind); returns the exit code.
        Call it shielded (``asyncio.shield``) from a task being cancelled."""
        if grace_s > 0 and self.process.returncode is None:
            _signal(self.pid, self.own_group, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exited(), grace_s)
        _signal(self.pid, self.own_group, signal.SIGKILL)
        return await self.exited()


async def spawn_async(
    argv: Sequence[str | Path],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | None = DEVNULL,
    stdout: int | None = PIPE,
    stderr: int | None = PIPE,
    own_group: bool = True,
    limit: int = LINE_LIMIT,
    preexec: Callable[[], None] | None = None,
) -> AsyncChild:
    """:func:`spawn` for asyncio: pipes are ``StreamReader``/``StreamWriter`` whose lines may
    be up to ``limit`` bytes. Raises ``OSError`` when it cannot start."""
    process = await asyncio.create_subprocess_exec(
        *[str(part) for part in argv],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=own_group,
        limit=limit,
        preexec_fn=preexec,
    )
    return AsyncChild(process, own_group=own_group)


async def read_lines(stream: asyncio.StreamReader | None, on_line: Callable[[str], None]) -> None:
    """Hand each line of ``stream`` (decoded, line ending removed) to ``on_line`` until
    end of file; one line at a time is held, never the whole output."""
    assert stream is not None
    while line := await stream.readline():
        on_line(line.decode(errors="replace").rstrip("\r\n"))
