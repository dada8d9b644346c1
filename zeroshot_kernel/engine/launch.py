"""Starting controllers: detached processes by default, or a thread in this process.

A detached controller is its own session (``processes.spawn``), so closing the
terminal, restarting the kernel or cancelling an ``await`` leaves the run going. Its
output goes to ``.zeroshot/controllers/<run>.log`` in the user's workspace (never in a
run's worktree, where a writer could have planted a link), opened without following a
link. The controller works in the user's workspace, never in a run's worktree (model-written
territory), never imports from its working directory (``python -P``), and its ``PYTHONPATH``
is the user's own.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from zeroshot_kernel.engine.controller import Controller
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.processes import DEVNULL, STDOUT, spawn
from zeroshot_kernel.sandbox import user_root
from zeroshot_kernel.workspace import LEDGER_ENV

RUN_WORKTREES = Path(".zeroshot") / "worktrees"
"""Where a run that works in a git worktree of its own (a software change) has it:
``<workspace>/.zeroshot/worktrees/<run-id>``."""


def run_workspace(workspace: Path, run_id: str) -> Path:
    """Where ``run_id``'s controller runs: its own worktree when it has one (so that a
    resumed software change carries on there, and its log is found there), else
    ``workspace``."""
    own = workspace / RUN_WORKTREES / run_id
    return own if own.is_dir() else workspace


def controller_log(workspace: Path, run_id: str) -> Path:
    """The log of ``run_id``'s detached controllers, in the user's workspace (``workspace``
    may be the run's worktree)."""
    root = user_root(workspace) or workspace
    return root / ".zeroshot" / "controllers" / f"{run_id}.log"


def _open_log(path: Path) -> int:
    """The log for appending, never through a link: a link planted at its place is replaced
    by a fresh file (its target untouched); a link at its folder's is refused."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent.is_symlink():
        raise OSError(f"{path.parent} is a symbolic link; the controller log is not written")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o600)
    except OSError as problem:
        if problem.errno != errno.ELOOP:
            raise
    path.unlink()
    return os.open(path, flags | os.O_EXCL, 0o600)


LOG_TAIL_BYTES = 8192


def last_log_line(workspace: Path, run_id: str) -> str | None:
    """The last line a detached controller of ``run_id`` logged (its final word when it
    stopped without finishing the run), read from the log's tail only."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(controller_log(workspace, run_id), flags), "rb") as log:
            if not stat.S_ISREG(os.fstat(log.fileno()).st_mode):
                return None
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - LOG_TAIL_BYTES))
            tail = log.read(LOG_TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:500] if lines else None


def start_detached(
    url: str, run_id: str, workspace: Path, *, replacing: str | None = None
) -> subprocess.Popen[bytes]:
    """Start a controller process that outlives this one; ``replacing`` names the dead
    controller whose lease it takes over."""
    env = {**os.environ, LEDGER_ENV: url}
    with os.fdopen(_open_log(controller_log(workspace, run_id)), "ab") as output:
        return spawn(
            [
                sys.executable,
                "-P",
                "-m",
                "zeroshot_kernel.engine.controller_main",
                run_id,
                "--workspace",
                str(workspace),
                *(["--replacing", replacing] if replacing else []),
            ],
            stdin=DEVNULL,
            stdout=output,
            stderr=STDOUT,
            cwd=user_root(workspace) or workspace,
            env=env,
        ).popen


def start_in_thread(
    ledger: Ledger, run_id: str, workspace: Path, *, replacing: str | None = None
) -> threading.Thread:
    """Run the controller on a daemon thread of this process (notebook-defined workers):
    the run then lives only as long as this process."""

    def drive() -> None:
        controller = Controller(
            ledger, run_id, workspace=workspace, in_process=True, replacing=replacing
        )
        asyncio.run(controller.run())

    thread = threading.Thread(target=drive, name=f"zeroshot-controller-{run_id}", daemon=True)
    thread.start()
    return thread
