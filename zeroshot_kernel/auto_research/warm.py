"""Warm starts for Python experiments whose imports dominate their run time.

Importing scikit-learn takes seconds; fitting a small model takes a fraction of one. A task
that declares ``preload`` modules runs its ``{python} script.py`` experiments as forks of a
warm interpreter (``_zygote.py``) that imported those modules once. Each experiment is still
a fresh process in its own process group, so the hard budget kills it like any command.

Differences from a cold start, by design: the preloaded modules are already imported (with
the environment of the task that started the interpreter), and ``atexit`` handlers do not
run. One warm interpreter serves each distinct (preload, env) pair for the life of this
process and exits with it.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from zeroshot_kernel.processes import DEVNULL, PIPE, spawn

_ZYGOTE = Path(__file__).with_name("_zygote.py")
_CLOSE_SECONDS = 2.0
_ANSWER_SECONDS = 300.0
"""How long the first fork may wait for the preloaded imports (later forks take ms)."""


class _Zygote:
    """One warm interpreter and the lock that keeps its request/answer pairs together."""

    def __init__(self, preload: Sequence[str], env: Mapping[str, str]) -> None:
        self.lock = threading.Lock()
        self.child = spawn(
            [sys.executable, _ZYGOTE, *preload],
            env=env,
            stdin=PIPE,
            stdout=PIPE,
            stderr=DEVNULL,
            text=True,
        )
        self.process = self.child.popen

    def fork(self, request: dict[str, object]) -> int:
        with self.lock:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            ready, _, _ = select.select([self.process.stdout], [], [], _ANSWER_SECONDS)
            answer = self.process.stdout.readline() if ready else ""
            if not answer:
                self.child.terminate()
                raise OSError("the warm interpreter did not answer (preloading failed or hung)")
        return int(json.loads(answer)["pid"])


_zygotes: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], _Zygote] = {}
_zygotes_lock = threading.Lock()


@atexit.register
def _close_zygotes() -> None:
    """Closing its stdin ends a warm interpreter; wait briefly so none is left behind."""
    for zygote in _zygotes.values():
        if zygote.process.stdin is not None:
            zygote.process.stdin.close()
        if zygote.child.wait(_CLOSE_SECONDS) is None:
            zygote.child.terminate()


def start_warm(
    script: str,
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    task_env: Mapping[str, str],
    preload: Sequence[str],
    log: Path,
    status: Path,
) -> int:
    """Fork ``script`` from the warm interpreter for ``preload``; returns the child's pid.

    The warm interpreter imports with this process's environment plus ``task_env`` (so
    thread limits apply to the preloaded libraries); ``env`` is the experiment's own.
    """
    key = (tuple(preload), tuple(sorted(task_env.items())))
    request: dict[str, object] = {
        "script": script,
        "args": list(args),
        "cwd": str(cwd),
        "env": dict(env),
        "log": str(log),
        "status": str(status),
    }
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is None or zygote.process.poll() is not None:
            zygote = _zygotes[key] = _Zygote(preload, {**os.environ, **task_env})
    return zygote.fork(request)
