"""The child-process helper (``zeroshot_kernel.processes``): a child leads its own group,
terminating it ends everything it started, a grace period lets it exit on SIGTERM, and the
environment carries only what is allowed."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap

import pytest

from zeroshot_kernel.processes import (
    PIPE,
    allowed_env,
    spawn,
    spawn_async,
    wait_exit,
)

# Starts a grandchild in the same group, says both pids, then waits to be killed.
PARENT_OF_ONE = textwrap.dedent("""\
    import subprocess, sys
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(grandchild.pid, flush=True)
    sys.stdin.read()
""")

# Exits with 7 on SIGTERM once it said it is ready.
POLITE = textwrap.dedent("""\
    import signal, sys
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
    print("ready", flush=True)
    signal.pause()
""")


def test_terminate_ends_the_whole_group_and_reaps_the_leader() -> None:
    child = spawn([sys.executable, "-c", PARENT_OF_ONE], stdin=PIPE, stdout=PIPE, text=True)
    assert child.popen.stdout is not None
    grandchild = int(child.popen.stdout.readline())
    assert os.getpgid(child.pid) == child.pid != os.getpgrp()
    assert os.getpgid(grandchild) == child.pid
    assert child.wait(0.01) is None
    assert child.terminate() == -9
    assert wait_exit(grandchild, 30)
    assert child.returncode == -9


def test_a_grace_period_lets_the_child_exit_on_sigterm() -> None:
    child = spawn([sys.executable, "-c", POLITE], stdout=PIPE, text=True)
    assert child.popen.stdout is not None
    assert child.popen.stdout.readline().strip() == "ready"
    assert child.terminate(grace_s=30) == 7


def test_the_async_child_is_terminated_with_its_group() -> None:
    async def go() -> tuple[int, int]:
        child = await spawn_async([sys.executable, "-c", PARENT_OF_ONE], stdin=PIPE)
        assert child.process.stdout is not None
        grandchild = int(await child.process.stdout.readline())
        return grandchild, await child.terminate()

    grandchild, code = asyncio.run(go())
    assert code == -9
    assert wait_exit(grandchild, 30)


def test_the_async_grace_period() -> None:
    async def go() -> int:
        child = await spawn_async([sys.executable, "-c", POLITE])
        assert child.process.stdout is not None
        assert (await child.process.stdout.readline()).strip() == b"ready"
        return await child.terminate(grace_s=30)

    assert asyncio.run(go()) == 7


def test_the_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZS_ALLOWED", "yes")
    monkeypatch.setenv("ZS_SECRET", "no")
    assert allowed_env(["ZS_ALLOWED", "ZS_UNSET"], {"ZS_NODE": "1"}) == {
        "ZS_ALLOWED": "yes",
        "ZS_NODE": "1",
    }
    child = spawn(
        [sys.executable, "-c", "import os; print(sorted(os.environ))"],
        env=allowed_env(["ZS_ALLOWED"]),
        stdout=PIPE,
        text=True,
    )
    output, _ = child.popen.communicate(timeout=60)
    assert "ZS_ALLOWED" in output and "ZS_SECRET" not in output
