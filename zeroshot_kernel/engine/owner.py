"""Who holds a run: a controller's identity, and whether its process is provably gone.

An owner id is ``host:pid:start:nonce``: the host name, the process id, the process's start
time in clock ticks since boot (so a recycled pid is not mistaken for the controller) and a
random nonce (two controllers of one process differ). On the same host, a controller whose
process no longer exists, or exists with another start time, or is a zombie, is gone for
sure; then its lease need not be waited out. On another host nothing is provable, and the
lease's expiry decides.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc/self/stat")


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    start: str

    def gone(self) -> bool:
        """True only when this process is certainly not running (on this host)."""
        if self.host != socket.gethostname():
            return False
        started = _start_ticks(self.pid)
        return started is None or (self.start != "" and started != self.start)


def new_owner_id() -> str:
    """This process's owner id, with a fresh nonce."""
    start = _start_ticks(os.getpid()) or ""
    return f"{socket.gethostname()}:{os.getpid()}:{start}:{uuid.uuid4().hex[:8]}"


def parse_owner(owner: str) -> Owner | None:
    """The parts of an owner id (older ids lack the start time); None when unreadable."""
    parts = owner.split(":")
    if len(parts) < 3 or not parts[1].isdigit():
        return None
    start = parts[2] if len(parts) >= 4 else ""
    return Owner(host=parts[0], pid=int(parts[1]), start=start)


def owner_gone(owner: str) -> bool:
    parsed = parse_owner(owner)
    return parsed is not None and parsed.gone()


def _start_ticks(pid: int) -> str | None:
    """The process's start time from ``/proc`` (None: no such process, or a zombie that has
    exited and waits for its parent). Without ``/proc``, existence alone is checked."""
    if not _PROC.exists():
        return _exists(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return _exists(pid)
    # The command name (field 2) is parenthesised and may hold spaces: split after it.
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else ""


def _exists(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return ""
