"""What every test shares for processes and waiting: the ``zeroshot`` command as a user runs
it, whether a process is alive, waiting on a condition instead of sleeping, and pid files
written whole or not at all.

Stand-in workers and scripts that run in other processes (``engine_workers.py``,
``change_workers.py``, the agent stand-ins, inline experiment scripts) cannot import this
module; they write their pid files the same way (a temporary dot-file in the same directory,
then ``os.replace``), so a reader that sees the file sees all of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

FIRST_POLL_S = 0.005
"""The first pause between two looks at a condition; it doubles up to ``MAX_POLL_S``."""
MAX_POLL_S = 0.02
"""Short: some tests catch a run between two ledger events, a window of a few dozen ms."""


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process. A zombie (exited, waiting to be reaped) is not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, but belongs to someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # no /proc to ask: os.kill found it
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_named(name: str) -> list[int]:
    """This machine's live processes named ``name`` (``/proc/PID/comm``; zombies are not
    live), in any PID namespace: how a test finds what a boxed process left running."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:  # gone meanwhile
            continue
        if comm == name and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, message: str = "") -> None:
    """Wait until ``predicate()`` is true, looking again after a short pause that grows
    (5 ms up to 20 ms); after ``timeout`` seconds fail with an AssertionError that says
    what was awaited."""
    deadline = time.monotonic() + timeout
    pause = FIRST_POLL_S
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {message or predicate}"
            )
        time.sleep(pause)
        pause = min(pause * 2, MAX_POLL_S)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees either no file or all of it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def read_pid_file(path: Path, timeout: float = 10.0) -> str:
    """The text of a pid file, once it exists (pid files are written atomically)."""
    wait_until(path.exists, timeout, f"the pid file {path}")
    return path.read_text()


def pid_files(folder: Path) -> list[Path]:
    """The pid files in ``folder`` (not the temporary dot-files they are written through)."""
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if not path.name.startswith("."))


def zeroshot(
    cwd: Path, *args: str, timeout: float = 300.0, **env: str
) -> subprocess.CompletedProcess[str]:
    """``zeroshot ARGS`` as a user runs it in ``cwd``: a process of its own with this
    process's environment and ``env``, its ledger and target from its arguments and ``env``
    alone (``ZEROSHOT_LEDGER``/``ZEROSHOT_TARGET`` cleared), git never looking above
    ``cwd``'s parent (a test's folder is never taken for part of a repository around it).
    ``timeout`` only bounds a hang."""
    clean = {k: v for k, v in os.environ.items() if k not in ("ZEROSHOT_LEDGER", "ZEROSHOT_TARGET")}
    ceiling = str(Path(cwd).resolve().parent)
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**clean, "GIT_CEILING_DIRECTORIES": ceiling, **env},
    )
