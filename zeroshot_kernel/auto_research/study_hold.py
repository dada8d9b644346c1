"""One run researches a study at a time, whichever ledger records it.

The controller driving an auto-research run holds its study from the run's first research
step until the controller ends: an exclusive ``fcntl`` lock on
``.zeroshot/locks/study-<name>.run.lock`` (the kernel drops it when the holder dies, so a
crashed controller never blocks anyone), and beside it ``study-<name>.holder.json`` naming
the run and its controller, for messages and for the early refusal at submission.

Submission (:func:`~zeroshot_kernel.auto_research.studies.claim_study`) refuses a study
that its own ledger shows busy, or whose holder file names a live controller. Two ledgers
racing past that check still cannot both research the study: the second controller fails
to take the lock, and its run ends with a refusal that names the holder before it records
anything in the study.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from zeroshot_kernel.contract.reading import DocumentError, read_text
from zeroshot_kernel.engine.owner import new_owner_id, owner_gone, parse_owner
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.retry import RetriesExhausted, RetryPolicy, retry_sync

LOCKS_DIR = Path(".zeroshot") / "locks"
MAX_HOLDER_BYTES = 4096
RELEASE_GRACE = RetryPolicy(attempts=20, first_delay_s=0.05, max_delay_s=1.0, budget_s=10.0)
"""How long a submission waits for the controller of a run that has ended to let go of its
study (Continue pressed the moment a stopped run closed) before it is refused."""


class StudyBusy(Refused):
    """Another run's controller holds the study."""


@dataclass(frozen=True)
class _Hold:
    run_id: str
    handle: IO[str]
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
        raise StudyBusy(_busy(study, _holder_now(lock_path, holder_path)))


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
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = lock_path.open("a", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        _write_holder(holder_path, run_id)
        _held[lock_path] = _Hold(run_id, handle, holder_path)
        return True


def release_run(run_id: str) -> None:
    """Let go of every study this process holds for ``run_id`` (its controller ended)."""
    with _guard:
        for lock_path, hold in list(_held.items()):
            if hold.run_id != run_id:
                continue
            recorded = _read_holder(hold.holder_path)
            if recorded is not None and recorded[0] == run_id:
                hold.holder_path.unlink(missing_ok=True)
            hold.handle.close()  # drops the lock
            del _held[lock_path]


def study_holder(workspace: str | os.PathLike[str], study: str) -> str | None:
    """The run whose live controller holds ``study``, as its holder file says (None when
    none does, or its controller is provably gone)."""
    return _holder_now(*_paths(workspace, study))


def _holder_now(lock_path: Path, holder_path: Path) -> str | None:
    with _guard:
        held = _held.get(lock_path)
    if held is not None:
        return held.run_id
    holder = _read_holder(holder_path)
    if holder is None or owner_gone(holder[1]):
        return None
    owner = parse_owner(holder[1])
    if owner is not None and owner.host != socket.gethostname() and _lock_free(lock_path):
        return None  # a controller on another host died: only its lock tells
    return holder[0]


def _lock_free(lock_path: Path) -> bool:
    """Nobody holds the lock (probed with a shared lock, let go at once)."""
    try:
        with lock_path.open("a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return False  # cannot tell: trust the holder file
    return True


def _paths(workspace: str | os.PathLike[str], study: str) -> tuple[Path, Path]:
    locks = Path(workspace).resolve() / LOCKS_DIR
    return locks / f"study-{study}.run.lock", locks / f"study-{study}.holder.json"


def _busy(study: str, run_id: str | None) -> str:
    who = f"run {run_id}" if run_id else "another run"
    return (
        f"study {study!r} is being researched by {who} (perhaps recorded in another "
        "ledger); wait for it or name another study with --study"
    )


def _write_holder(path: Path, run_id: str) -> None:
    """Atomically: submitters read it while controllers write it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    temporary.write_text(json.dumps({"runId": run_id, "owner": new_owner_id()}), encoding="utf-8")
    os.replace(temporary, path)


def _read_holder(path: Path) -> tuple[str, str] | None:
    """(run id, controller owner id) from a holder file; None when absent or unreadable."""
    try:
        recorded = json.loads(read_text(path, MAX_HOLDER_BYTES))
        run_id, owner = recorded["runId"], recorded["owner"]
    except (DocumentError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(run_id, str) or not isinstance(owner, str):
        return None
    return run_id, owner
