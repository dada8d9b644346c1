"""Starting controllers: detached processes by default, or a thread in this process.

A detached controller is its own session (``start_new_session``), so closing the
terminal, restarting the kernel or cancelling an ``await`` leaves the run going. Its
output goes to ``.zeroshot/controllers/<run>.log`` in the workspace.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

from zeroshot_kernel.engine.controller import Controller
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.workspace import LEDGER_ENV


def controller_log(workspace: Path, run_id: str) -> Path:
    return workspace / ".zeroshot" / "controllers" / f"{run_id}.log"


def start_detached(url: str, run_id: str, workspace: Path) -> subprocess.Popen[bytes]:
    """Start a controller process that outlives this one."""
    log_path = controller_log(workspace, run_id)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, LEDGER_ENV: url}
    python_path = [str(workspace), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(python_path)
    with log_path.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "zeroshot_kernel.engine.controller_main", run_id,
             "--workspace", str(workspace)],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            cwd=workspace, env=env, start_new_session=True, close_fds=True,
        )


def start_in_thread(ledger: Ledger, run_id: str, workspace: Path) -> threading.Thread:
    """Run the controller on a daemon thread of this process (notebook-defined workers):
    the run then lives only as long as this process."""

    def drive() -> None:
        controller = Controller(ledger, run_id, workspace=workspace, in_process=True)
        asyncio.run(controller.run())

    thread = threading.Thread(target=drive, name=f"zeroshot-controller-{run_id}", daemon=True)
    thread.start()
    return thread
