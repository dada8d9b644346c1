"""Plain ``git`` subprocess calls for delivery: no library, no shell, never interactive.

Each call runs in its own process group so that a cancelled delivery (the node's timeout,
a stop) kills git and whatever it started (ssh, credential helpers) instead of leaving
them behind; network calls also get their own deadline. A ``guarded`` call (a push) runs
under :mod:`zeroshot_kernel.harness.agent_guard`, which kills the group when the
controller dies, so that no push outlives its controller unobserved.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zeroshot_kernel.exceptions import OperationFailed
from zeroshot_kernel.processes import spawn_async

LOCAL_TIMEOUT_S = 60.0
NETWORK_TIMEOUT_S = 300.0
GUARD = Path(__file__).resolve().parents[1] / "harness" / "agent_guard.py"
QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # fail instead of asking for a password nobody can type
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
    "LC_ALL": "C",  # stable messages to classify
}


class GitError(OperationFailed):
    """A git command failed; ``stderr`` says why."""

    def __init__(self, args: tuple[str, ...], code: int | None, stderr: str) -> None:
        self.args_run = args
        self.code = code
        self.stderr = stderr.strip()
        last = self.stderr.splitlines()[-1] if self.stderr else f"exit code {code}"
        super().__init__(f"git {' '.join(args[:2])} failed: {last}")


@dataclass(frozen=True)
class Git:
    """git commands run in ``cwd`` (a work tree), with ``env`` added to the environment."""

    cwd: Path
    env: Mapping[str, str] | None = None

    async def __call__(
        self,
        *args: str,
        timeout: float = LOCAL_TIMEOUT_S,
        check: bool = True,
        guarded: bool = False,
    ) -> str:
        """stdout of ``git <args>``; raises :class:`GitError` on failure (unless not
        ``check``, then the output of a failed call is ``""``) or on timeout.
        ``guarded``: git dies with the controller (see the module doc)."""
        env = {**os.environ, **QUIET_ENV, **(self.env or {})}
        program = [sys.executable, "-I", str(GUARD), "git"] if guarded else ["git"]
        child = await spawn_async([*program, *args], cwd=self.cwd, env=env)
        try:
            stdout, stderr = await asyncio.wait_for(child.process.communicate(), timeout)
        except TimeoutError:
            await child.terminate()
            raise GitError(args, None, f"no answer within {timeout:g} s") from None
        except BaseException:
            await asyncio.shield(child.terminate())
            raise
        if child.returncode != 0:
            if not check:
                return ""
            raise GitError(args, child.returncode, stderr.decode(errors="replace"))
        return stdout.decode(errors="replace").strip()
