"""The bubblewrap command line for a :class:`~zeroshot_kernel.sandbox.policy.BoxPolicy`.

Every box: a read-only view of the root filesystem, fresh ``/dev`` and ``/proc``, a private
``/tmp``, new user/mount/PID/IPC/UTS/cgroup namespaces (the network one too unless the
policy allows the network), no capabilities (even for root, whose capabilities would let it
remount the read-only root), a session of its own (no terminal to inject keystrokes into),
and death with its parent. The PID namespace is what makes "nothing outlives its step"
true: when the box's first process ends, the kernel kills everything left inside, daemons
that called ``setsid`` included.

Mounts are applied shallowest first, so a folder bound below a hidden one (a worktree
below a hidden ``.zeroshot/``) or a read-only path inside a writable folder (the worktree's
``.git``) lands on top of what it refines.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from zeroshot_kernel.exceptions import Unavailable
from zeroshot_kernel.sandbox.policy import BoxPolicy

BWRAP_ENV = "ZEROSHOT_BWRAP"
"""Names the bwrap binary to use (default: ``bwrap`` on PATH)."""
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf "
    "install bubblewrap) on a Linux machine with user namespaces enabled, or pass "
    "--sandbox none to run model-written code UNCONTAINED"
)
_PROBE_TIMEOUT_S = 30.0
_HIDE, _WRITE, _READ_ONLY = 0, 1, 2


class SandboxUnavailable(Unavailable):
    """No box can be made here; the message says why and how to get one."""


def binary() -> str | None:
    configured = os.environ.get(BWRAP_ENV)
    if configured is not None:
        return configured if os.path.isfile(configured) and os.access(configured, os.X_OK) else None
    return shutil.which("bwrap")


@functools.cache
def _probe(path: str | None) -> str | None:
    if path is None:
        return "bubblewrap (bwrap) is not installed"
    argv = [path, *_frame(network=False), "--", "true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as failure:
        return f"bwrap cannot run: {failure}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot make a box here: {said[-1] if said else f'exit {done.returncode}'}"
    return None


def problem() -> str | None:
    """Why no box can be made here (``None`` when one can), probed once per binary."""
    return _probe(binary())


def require() -> str:
    """The bwrap binary; raises :class:`SandboxUnavailable` saying why and what to do."""
    reason = problem()
    path = binary()
    if reason is not None or path is None:
        raise SandboxUnavailable(f"no sandbox: {reason}; {INSTALL_HINT}")
    return path


def _frame(*, network: bool) -> list[str]:
    return [
        "--die-with-parent",
        "--unshare-all",
        *(["--share-net"] if network else []),
        "--cap-drop",
        "ALL",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _needed(policy: BoxPolicy) -> list[Path]:
    """The hidden paths that need a mount of their own: not those already below a hidden
    folder, unless a folder shown again in between would show them."""
    hidden = [Path(_real(path)) for path in policy.hidden]
    shown = [Path(_real(path)) for path in (*policy.writable, *policy.read_only)]
    needed = []
    for path in hidden:
        covers = [h for h in hidden if h in path.parents]
        if not covers or any(
            any(h == s or h in s.parents for h in covers) and (s == path or s in path.parents)
            for s in shown
        ):
            needed.append(path)
    return needed


def command(policy: BoxPolicy, argv: Sequence[str | os.PathLike[str]], bwrap: str) -> list[str]:
    """``bwrap <options> -- argv``: ``argv`` run as ``policy`` says."""
    mounts: list[tuple[int, int, list[str]]] = [(1, _HIDE, ["--tmpfs", "/tmp"])]

    def add(kind: int, path: Path, options: list[str]) -> None:
        mounts.append((_real(path).count("/"), kind, options))

    for path in _needed(policy):
        if os.path.isdir(path):
            add(_HIDE, path, ["--tmpfs", _real(path)])
        elif os.path.lexists(path):
            add(_HIDE, path, ["--ro-bind", "/dev/null", _real(path)])
    for path in policy.writable:
        add(_WRITE, path, ["--bind", _real(path), _real(path)])
    for path in policy.read_only:
        if os.path.exists(path):
            add(_READ_ONLY, path, ["--ro-bind", _real(path), _real(path)])
    options = _frame(network=policy.network)
    for device in policy.devices:
        if os.path.exists(device):
            options += ["--dev-bind", _real(device), _real(device)]
    for _, _, mount in sorted(mounts, key=lambda item: (item[0], item[1])):
        options += mount
    return [bwrap, *options, "--chdir", _real(policy.cwd), "--", *map(str, argv)]
