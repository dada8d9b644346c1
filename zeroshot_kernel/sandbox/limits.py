"""Resource limits of a box: a cgroup for its processes and memory, rlimits for the rest.

A fork bomb or a memory bomb must end its own step, never the controller or the machine.
The process count and memory of a whole box are only enforceable by a cgroup: one is made
per box under this process's own cgroup (v1 ``pids``/``memory`` hierarchies, or v2 where
the controllers are delegated), and the box's first process joins it before it executes
anything. Where no cgroup can be made (an unprivileged user without delegation), memory
falls back to a per-process address-space limit and the process count is not enforced
(:attr:`LimitPlan.enforced` says what is). File size, CPU time and core dumps are rlimits,
inherited by everything the box starts.

After the box ends, :func:`LimitPlan.exceeded` names the limit that stopped it, from the
cgroup's own counters or the signal the kernel sent (``SIGXCPU``, ``SIGXFSZ``).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from zeroshot_kernel.sandbox.policy import Limits

_CGROUP_PREFIX = "zeroshot-box-"
_REMOVE_TRIES = 50
_REMOVE_PAUSE_S = 0.02
_CPU_GRACE_S = 5
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory|ENOMEM", re.IGNORECASE
)
_TOO_LARGE = re.compile(r"File too large|EFBIG")
"""How a process that ignores ``SIGXFSZ`` (Python does) reports the file-size limit."""


def _mounts() -> dict[str, Path]:
    """Mount point of each cgroup v1 controller (``pids``, ``memory``) and of v2 (``""``)."""
    found: dict[str, Path] = {}
    try:
        text = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return found
    for line in text.splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point, kind, options = Path(fields[4]), tail[0], tail[2].split(",")
        if kind == "cgroup2":
            found.setdefault("", point)
        elif kind == "cgroup":
            for controller in ("pids", "memory"):
                if controller in options:
                    found.setdefault(controller, point)
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and the v2 one under ``""``."""
    paths: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return paths
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        controllers, path = parts[1], parts[2]
        if controllers == "":
            paths[""] = path
        for controller in controllers.split(","):
            if controller in ("pids", "memory"):
                paths[controller] = path
    return paths


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value, encoding="ascii")
    except OSError:
        return False
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def _counter(text: str, name: str) -> int:
    match = re.search(rf"^{re.escape(name)} (\d+)$", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


@dataclass
class _Cgroups:
    """The cgroup folders made for one box: ``pids`` and/or ``memory`` (v1), or one v2."""

    folders: dict[str, Path] = field(default_factory=dict)
    unified: bool = False

    @classmethod
    def make(cls, limits: Limits) -> _Cgroups:
        wanted = {
            name: value
            for name, value in (("pids", limits.processes), ("memory", limits.memory_bytes))
            if value is not None
        }
        made = cls()
        if not wanted:
            return made
        mounts, own = _mounts(), _own_paths()
        name = _CGROUP_PREFIX + uuid.uuid4().hex[:12]
        for controller, value in wanted.items():
            if controller not in mounts or controller not in own:
                continue
            folder = mounts[controller] / own[controller].lstrip("/") / name
            try:
                folder.mkdir()
            except OSError:
                continue
            setting = "pids.max" if controller == "pids" else "memory.limit_in_bytes"
            if _write(folder / setting, str(value)):
                made.folders[controller] = folder
            else:
                with contextlib.suppress(OSError):
                    folder.rmdir()
        if made.folders or "" not in mounts or "" not in own:
            return made
        return cls._unified(mounts[""] / own[""].lstrip("/"), name, wanted) or made

    @classmethod
    def _unified(cls, parent: Path, name: str, wanted: dict[str, int]) -> _Cgroups | None:
        delegated = _read(parent / "cgroup.subtree_control").split()
        if not all(controller in delegated for controller in wanted):
            return None
        folder = parent / name
        try:
            folder.mkdir()
        except OSError:
            return None
        made = cls(unified=True)
        for controller, value in wanted.items():
            if _write(folder / f"{controller}.max", str(value)):
                made.folders[controller] = folder
        if not made.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()
        return made

    def join(self) -> None:
        """Move the calling process in (the box's first process, before it executes)."""
        pid = str(os.getpid())
        for folder in dict.fromkeys(self.folders.values()):
            _write(folder / "cgroup.procs", pid)

    def exceeded(self) -> str | None:
        pids = self.folders.get("pids")
        if pids is not None and _counter(_read(pids / "pids.events"), "max") > 0:
            return "processes"
        memory = self.folders.get("memory")
        if memory is not None:
            if self.unified:
                hit = _counter(_read(memory / "memory.events"), "oom_kill")
            else:
                oom = _read(memory / "memory.oom_control")
                hit = _counter(oom, "oom_kill") if "oom_kill " in oom else 0
                hit = hit or int(_read(memory / "memory.failcnt").strip() or 0)
            if hit > 0:
                return "memory"
        return None

    def remove(self) -> None:
        """Kill whatever is left in the cgroups, then remove them."""
        for folder in dict.fromkeys(self.folders.values()):
            for _ in range(_REMOVE_TRIES):
                for pid in _read(folder / "cgroup.procs").split():
                    with contextlib.suppress(OSError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(_REMOVE_PAUSE_S)


@dataclass
class LimitPlan:
    """The limits of one box as they will be enforced: made before the box starts,
    applied in its first process (:meth:`apply`), read (:meth:`exceeded`) and removed
    (:meth:`close`) after it ends."""

    limits: Limits
    cgroups: _Cgroups = field(default_factory=_Cgroups)

    @classmethod
    def make(cls, limits: Limits) -> LimitPlan:
        return cls(limits, _Cgroups.make(limits))

    @property
    def address_space(self) -> int | None:
        """The per-process address-space limit, used only where no memory cgroup exists."""
        limits = self.limits
        if "memory" in self.cgroups.folders or not limits.address_space_fallback:
            return None
        return limits.memory_bytes

    @property
    def enforced(self) -> dict[str, str]:
        """Each limit and how it is enforced (or ``not enforced``), for receipts."""
        limits, folders = self.limits, self.cgroups.folders
        shown: dict[str, str] = {}
        if limits.processes is not None:
            shown["processes"] = (
                f"{limits.processes} (cgroup)" if "pids" in folders else "not enforced"
            )
        if limits.memory_bytes is not None:
            how = "cgroup" if "memory" in folders else "per process"
            shown["memory"] = (
                "not enforced"
                if how == "per process" and self.address_space is None
                else f"{limits.memory_bytes} bytes ({how})"
            )
        if limits.file_size_bytes is not None:
            shown["fileSize"] = f"{limits.file_size_bytes} bytes"
        if limits.cpu_seconds is not None:
            shown["cpu"] = f"{limits.cpu_seconds} s"
        return shown

    def apply(self) -> None:
        """In the box's first process, before it executes: join the cgroups, set rlimits.
        Runs between fork and exec, so it only makes system calls."""
        self.cgroups.join()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        limits = self.limits
        if limits.file_size_bytes is not None:
            resource.setrlimit(
                resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)
            )
        if limits.cpu_seconds is not None:
            resource.setrlimit(
                resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + _CPU_GRACE_S)
            )
        if self.address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (self.address_space, self.address_space))

    def exceeded(self, exit_code: int | None, output: str = "") -> str | None:
        """Which limit stopped the box (``processes``, ``memory``, ``file size``, ``cpu
        time``), or ``None``. ``exit_code`` is the box's (128 + signal when killed)."""
        hit = self.cgroups.exceeded()
        if hit is not None:
            return hit
        if exit_code in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return "cpu time"
        if exit_code in (128 + signal.SIGXFSZ, -signal.SIGXFSZ):
            return "file size"
        if exit_code in (0, None):
            return None
        tail = output[-4000:]
        if self.limits.file_size_bytes is not None and _TOO_LARGE.search(tail):
            return "file size"
        if self.address_space is not None and _OUT_OF_MEMORY.search(tail):
            return "memory"
        return None

    def close(self) -> None:
        self.cgroups.remove()
