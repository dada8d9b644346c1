"""One run researches a study at a time, whichever ledger records it.

The controller driving an auto-research run holds its study from the run's first research
step until the controller ends: an exclusive ``fcntl`` lock on
``.zeroshot/locks/study-<name>.run.lock`` (the kernel drops it when the holder dies, so a
crashed controller never blocks anyone), and beside it ``study-<name>.holder.json`` naming
the run and its controller, for messages and for the early refusal at submission.

Submission (:func:`.catalog.claim_study`) refuses a study that its own ledger shows busy,
or whose holder file names a run while the lock is held: a holder file alone proves nothing
(its controller may have died, or other hands wrote it), and what it names is shown only
when it is a plain run id. Two ledgers racing past that check still cannot both research
the study: the second controller fails to take the lock, and its run ends with a refusal
that names the holder before it records anything in the study. Lock files are never opened
through a link (:mod:`zeroshot_kernel.auto_research.lock_files`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from zeroshot_kernel.auto_research.lock_files import locks_folder, open_lock, replace_file
from zeroshot_kernel.contract.reading import DocumentError, read_text
from zeroshot_kernel.engine.owner import new_owner_id
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.retry import RetriesExhausted, RetryPolicy, retry_sync

MAX_HOLDER_BYTES = 4096
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
"""What a holder file's run id must look like to be believed and printed (a forged one
could hold a newline and fake a second ``error:`` line)."""
RELEASE_GRACE = RetryPolicy(attempts=20, first_delay_s=0.05, max_delay_s=1.0, budget_s=10.0)
"""How long a submission waits for the controller of a run that has ended to let go of its
study (Continue pressed the moment a stopped run closed) before it is refused."""


class StudyBusy(Refused):
    """Another run's controller holds the study."""


@dataclass(frozen=True)
class _Hold:
    run_id: str
    handle: BinaryIO
    """The open lock file: closing it drops the lock."""
    holder_path: Path


_held: dict[Path, _Hold] = {}
"""Lock file -> the hold this process has on it."""
_guard = threading.Lock()


def hold_study(workspace: str | os.PathLike[str], study: str, run_id: str) -> None:
    """Hold ``study`` for ``run_id`` in this process (again: a no-op); never waits (it
    runs on the controller's event loop). Raises :class:`StudyBusy` when another run holds
    it, here or in another process."""
    lock_path, holder_path = _paths(workspace, study)
    if not _try_hold(lock_path, holder_path, run_id):
        raise StudyBusy(_busy(study, _holder_now(lock_path, holder_path), holder_path))


def await_release(workspace: str | os.PathLike[str], study: str) -> str | None:
    """Wait up to :data:`RELEASE_GRACE` for ``study``'s holder to let go (a run that has
    ended, whose controller is closing); returns the holder still there, or None."""
    paths = _paths(workspace, study)
    try:
        return retry_sync(
            lambda: _holder_now(*paths), RELEASE_GRACE, transient_result=lambda h: h is not None
        )
    except RetriesExhausted:
        return _holder_now(*paths)


def _try_hold(lock_path: Path, holder_path: Path, run_id: str) -> bool:
    """One attempt, under the process's guard (which is never held while waiting)."""
    with _guard:
        held = _held.get(lock_path)
        if held is not None:  # every research call after the first ends here
            return held.run_id == run_id
        handle = open_lock(lock_path)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_holder(holder_path, run_id)
        except BlockingIOError:
            handle.close()
            return False
        except BaseException:  # no holder file written: let go of the lock at once
            handle.close()
            raise
        _held[lock_path] = _Hold(run_id, handle, holder_path)
        return True


def release_run(run_id: str) -> None:
    """Let go of every study this process holds for ``run_id`` (its controller ended)."""
    with _guard:
        for lock_path, hold in list(_held.items()):
            if hold.run_id != run_id:
                continue
            if _read_holder(hold.holder_path) == run_id:
                hold.holder_path.unlink(missing_ok=True)
            hold.handle.close()  # drops the lock
            del _held[lock_path]


def study_holder(workspace: str | os.PathLike[str], study: str) -> str | None:
    """The run whose controller holds ``study``, as its holder file says, while the lock
    is held (None when it is not, or the file names no plain run id). Raises
    :class:`~.lock_files.LockUnusable` for a lock file that is a link or no file."""
    return _holder_now(*_paths(workspace, study))


def holder_file(workspace: str | os.PathLike[str], study: str) -> Path:
    """The file naming ``study``'s holder, for messages (a user may have to look at it)."""
    return _paths(workspace, study)[1]


def _holder_now(lock_path: Path, holder_path: Path) -> str | None:
    with _guard:
        held = _held.get(lock_path)
    if held is not None:
        return held.run_id
    if not os.path.lexists(lock_path) or _lock_free(lock_path):
        return None  # whatever the holder file says: a live controller would hold the lock
    return _read_holder(holder_path)


def _lock_free(lock_path: Path) -> bool:
    """Nobody holds the lock (probed with a shared lock, let go at once)."""
    with open_lock(lock_path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return True


def _paths(workspace: str | os.PathLike[str], study: str) -> tuple[Path, Path]:
    locks = locks_folder(workspace)
    return locks / f"study-{study}.run.lock", locks / f"study-{study}.holder.json"


def _busy(study: str, run_id: str | None, holder_path: Path) -> str:
    who = f"run {run_id}" if run_id else "another run"
    return (
        f"study {study!r} is being researched by {who} (perhaps recorded in another "
        f"ledger; see {holder_path}); wait for it or name another study with --study"
    )


def _write_holder(path: Path, run_id: str) -> None:
    """Atomically: submitters read it while controllers write it."""
    replace_file(path, json.dumps({"runId": run_id, "owner": new_owner_id()}).encode())


def _read_holder(path: Path) -> str | None:
    """The run id a holder file names; None when absent, unreadable or no plain run id."""
    try:
        recorded = json.loads(read_text(path, MAX_HOLDER_BYTES))
        run_id = recorded["runId"]
    except (DocumentError, ValueError, TypeError, KeyError):
        return None
    return run_id if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id) else None
