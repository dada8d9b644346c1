"""Runs an agent CLI so that it cannot outlive its controller.

``python -I agent_guard.py ARGV...`` is started as the leader of a new process group; it
runs ARGV in that group (sharing its stdin, stdout and stderr) and exits with its status.
A controller killed with SIGKILL cannot kill its agents, and a resumed run retries their
executions, so an orphan must not keep editing the workspace beside the retry: the guard
watches its parent and, when the parent is gone, kills the whole group.

Standard library only, run as a file (not ``-m``), so that it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

PARENT_POLL_S = 0.2
CANNOT_START = 127
CANNOT_START_MARK = "zeroshot-agent-guard: cannot start"


def main(argv: list[str]) -> int:
    parent = os.getppid()
    try:
        child = subprocess.Popen(argv)
    except OSError as problem:
        print(f"{CANNOT_START_MARK} {argv[0]}: {problem}", file=sys.stderr)
        return CANNOT_START
    while True:
        try:
            code = child.wait(timeout=PARENT_POLL_S)
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:
                os.killpg(os.getpgrp(), signal.SIGKILL)
            continue
        return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
