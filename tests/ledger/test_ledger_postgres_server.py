"""The test PostgreSQL itself: it listens only on 127.0.0.1, and it never outlives the test
process that started it, whether that process stops it, exits, or is killed outright."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import postgres_server
import psycopg
import pytest
from conftest import require
from support import alive, wait_until

# slow: PostgreSQL servers, started and killed
pytestmark = pytest.mark.slow

STOP_WAIT_S = 15.0


@pytest.fixture(autouse=True)
def _needs_postgres() -> Iterator[None]:
    reason = postgres_server.missing_reason()
    require(reason is None, f"no PostgreSQL for the ledger tests: {reason}")
    yield


def _postmaster_pid(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().splitlines()[0])


def _wait_gone(pid: int, root: Path, message: str) -> None:
    wait_until(lambda: not alive(pid) and not root.exists(), STOP_WAIT_S, message)


def test_a_stopped_server_leaves_no_process_and_no_files() -> None:
    bin_dir = postgres_server.find_bin_dir()
    assert bin_dir is not None
    server = postgres_server.PostgresServer(bin_dir)
    server.start()
    pid = _postmaster_pid(server.data)
    with server.database() as url:
        assert url.startswith(f"postgresql+psycopg://postgres@127.0.0.1:{server.port}/")
        database = url.rsplit("/", 1)[1]
        with psycopg.connect(
            host="127.0.0.1", port=server.port, user="postgres", dbname=database
        ) as connection:
            listening = connection.execute("SHOW listen_addresses").fetchone()
            socket_dir = connection.execute("SHOW unix_socket_directories").fetchone()
        assert listening == ("127.0.0.1",)
        assert socket_dir == (str(server.root),)
    server.stop()
    server.stop()  # idempotent
    _wait_gone(pid, server.root, "the stopped server's process and files to be gone")


KILLED_PROCESS = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import postgres_server
    server = postgres_server.shared_server()
    print(server.root, flush=True)
    time.sleep(600)
    """
)


def test_a_killed_test_process_does_not_leave_its_server_running() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_PROCESS, str(Path(__file__).parents[1])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        root = Path(child.stdout.readline().strip())
        assert root.is_dir(), "the child did not start its server"
        pid = _postmaster_pid(root / "data")
        assert alive(pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    _wait_gone(pid, root, "the server to go with the process that started it")
