"""The box itself (``zeroshot_kernel.sandbox``), with real bubblewrap: what a boxed process
can see, write, reach and leave behind, and the limit that stopped it. Each test asserts
from what the process left (files on the host, a listener's connections, /proc), never
from the box's own description of itself."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import require
from support import processes_named, wait_until

from zeroshot_kernel.processes import PIPE, STDOUT
from zeroshot_kernel.sandbox import (
    Box,
    Containment,
    Limits,
    SandboxUnavailable,
    box_env,
    folder_policy,
    problem,
)
from zeroshot_kernel.sandbox.bwrap import BWRAP_ENV
from zeroshot_kernel.sandbox.policy import MiB

RUN_TIMEOUT_S = 120


@pytest.fixture(autouse=True)
def bubblewrap() -> None:
    require(problem() is None, f"no box can be made here: {problem()} (make test installs it)")


def run_boxed(
    folder: Path,
    code: str,
    *,
    containment: Containment,
    env: dict[str, str] | None = None,
    **policy: object,
) -> tuple[int, str, str | None]:
    """Run Python ``code`` boxed in ``folder``: exit code, output, the limit that stopped it."""
    box_policy = folder_policy(folder, containment, env=box_env(env or {}), **policy)  # type: ignore[arg-type]
    with Box.open(box_policy, containment) as box:
        child = box.spawn([sys.executable, "-c", textwrap.dedent(code)], stdout=PIPE, stderr=STDOUT)
        output = child.popen.communicate(timeout=RUN_TIMEOUT_S)[0].decode(errors="replace")
        code_ = child.popen.returncode
        return code_, output, box.exceeded(code_, output)


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A user's workspace with a ledger, records and a repository, and a folder to box."""
    workspace = tmp_path / "ws"
    zeroshot = workspace / ".zeroshot"
    (zeroshot / "research").mkdir(parents=True)
    (zeroshot / "ledger.db").write_text("ledger rows")
    (zeroshot / "research" / "record.json").write_text("{}")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "code.py").write_text("print('user code')")
    folder = zeroshot / "worktrees" / "run-1"
    (folder / ".zeroshot").mkdir(parents=True)
    (folder / ".git").write_text("gitdir: ../../../.git/worktrees/run-1\n")
    (folder / "main.py").write_text("x = 1\n")
    yield {"workspace": workspace, "folder": folder, "ledger": zeroshot / "ledger.db"}


def test_a_box_writes_only_its_own_folder_and_sees_no_ledger_records_or_checkout(
    layout: dict[str, Path],
) -> None:
    workspace, folder = layout["workspace"], layout["folder"]
    containment = Containment(workspace_root=workspace, ledger_path=layout["ledger"])
    before = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file()}
    code, output, _ = run_boxed(
        folder,
        f"""
        import os
        def attempt(label, action):
            try:
                action()
                print(label, "ok")
            except OSError as problem:
                print(label, "refused", problem.errno)
        attempt("own", lambda: open("made.txt", "w").write("mine"))
        attempt("git", lambda: open(".git", "w").write("gitdir: /elsewhere"))
        attempt("zeroshot", lambda: open(".zeroshot/planted", "w").write("x"))
        attempt("hook", lambda: open({str(workspace / ".git/hooks/pre-push")!r}, "w").write("x"))
        print("ledger", os.path.exists({str(layout["ledger"])!r}))
        print("records", os.listdir({str(workspace / ".zeroshot")!r}))
        print("checkout", os.path.exists({str(workspace / "code.py")!r}))
        """,
        containment=containment,
    )
    assert code == 0, output
    assert "own ok" in output
    for label in ("git", "zeroshot", "hook"):
        assert f"{label} refused" in output, output
    assert "ledger False" in output and "checkout False" in output
    assert "records ['worktrees']" in output  # only the way down to its own folder
    assert (folder / "made.txt").read_text() == "mine"
    after = {p: p.read_bytes() for p in before}
    assert after == before


def test_home_credentials_are_hidden_and_the_environment_is_only_what_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("machine github.com password hunter2")
    (home / ".bashrc").write_text("# the user's own\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GH_TOKEN", "ghp_controller_secret_0123456789")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-controller-secret-0123456789")
    folder = tmp_path / "folder"
    folder.mkdir()
    code, output, _ = run_boxed(
        folder,
        f"""
        import os
        home = {str(home)!r}
        print("ssh", os.listdir(home + "/.ssh"))
        try:
            print("netrc", repr(open(home + "/.netrc").read()))
        except OSError as problem:
            print("netrc unreadable", problem.errno)
        try:
            open(home + "/.bashrc", "a").write("evil\\n")
        except OSError as problem:
            print("bashrc refused", problem.errno)
        print("env", sorted(os.environ))
        """,
        containment=Containment(),
        env={"SEED": "7"},
    )
    assert code == 0, output
    assert "ssh []" in output
    assert "netrc ''" in output or "netrc unreadable" in output
    assert "hunter2" not in output
    assert (home / ".bashrc").read_text() == "# the user's own\n"
    assert "GH_TOKEN" not in output and "AWS_SECRET_ACCESS_KEY" not in output
    assert "'SEED'" in output


def test_no_network_unless_the_policy_allows_it(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        listener.settimeout(30)
        with contextlib.suppress(OSError):
            accepted.append(listener.accept())

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    connect = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=5)
            print("connected")
        except OSError as problem:
            print("refused", problem.errno)
        """
    _, boxed, _ = run_boxed(tmp_path, connect, containment=Containment())
    assert "refused" in boxed and not accepted
    _, allowed, _ = run_boxed(tmp_path, connect, containment=Containment(), network=True)
    assert "connected" in allowed
    thread.join(30)
    assert accepted
    listener.close()


@pytest.mark.slow  # a boxed process tree, waited out
def test_nothing_outlives_its_box(tmp_path: Path) -> None:
    name = f"zsbox-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "daemon-was-here"
    code, output, _ = run_boxed(
        tmp_path,
        f"""
        import subprocess, sys
        daemon = (
            "import sys, time, pathlib; open('/proc/self/comm', 'w').write(sys.argv[1]); "
            "time.sleep(2); pathlib.Path(sys.argv[2]).write_text('alive')"
        )
        subprocess.Popen(
            [sys.executable, "-c", daemon, {name!r}, {str(marker)!r}], start_new_session=True
        )
        print("left a daemon")
        """,
        containment=Containment(),
    )
    assert code == 0 and "left a daemon" in output
    wait_until(lambda: not processes_named(name), timeout=10, message="the daemon to be gone")
    deadline = time.monotonic() + 3  # it would have written after 2 s
    while time.monotonic() < deadline:
        assert not marker.exists()
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("limit", "limits", "code"),
    [
        (
            "processes",
            Limits(processes=32),
            "import os, time\nwhile True:\n    os.fork() or time.sleep(5)",
        ),
        (
            "memory",
            Limits(memory_bytes=256 * MiB),
            "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 2**20))",
        ),
        (
            "file size",
            Limits(file_size_bytes=1 * MiB),
            "open('big', 'wb').write(b'0' * (8 * 2**20))",
        ),
        ("cpu time", Limits(cpu_seconds=1), "while True:\n    pass"),
    ],
)
def test_a_limit_stops_the_box_and_says_which(
    limit: str, limits: Limits, code: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    exit_code, output, exceeded = run_boxed(
        tmp_path, code, containment=Containment(), limits=limits
    )
    assert exit_code != 0
    assert exceeded == limit, output[-500:]
    assert time.monotonic() - started < 60
    if limit == "file size":
        assert (tmp_path / "big").stat().st_size <= 1 * MiB


def test_no_bubblewrap_is_refused_saying_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-such-bwrap"))
    policy = folder_policy(tmp_path, Containment(), env=box_env({}))
    with pytest.raises(SandboxUnavailable) as refused:
        Box.open(policy, Containment())
    message = str(refused.value)
    assert "apt-get install bubblewrap" in message and "--sandbox none" in message
    # Uncontained by the user's choice: the process runs as it is, with the same environment.
    with Box.open(policy, Containment(mode="none")) as box:
        assert not box.contained and box.argv(["true"]) == ["true"]
        assert "GH_TOKEN" not in box.env


def test_a_venv_inside_a_hidden_checkout_is_shown_again_read_only(
    layout: dict[str, Path],
) -> None:
    """A worktree's box hides the user's checkout, but not the interpreter the user's PATH
    points into it (a project's own ``.venv``)."""
    workspace, folder = layout["workspace"], layout["folder"]
    venv = workspace / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "tool").write_text("#!/bin/sh\necho venv tool\n")
    (venv / "bin" / "tool").chmod(0o755)
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    code, output, _ = run_boxed(
        folder,
        """
        import subprocess
        print(subprocess.run(["tool"], capture_output=True, text=True).stdout.strip())
        """,
        containment=Containment(workspace_root=workspace),
        env=env,
    )
    assert code == 0 and "venv tool" in output, output
