"""The public API: what ``import zeroshot_kernel`` offers, and clients that create nothing
until they write and close what they open (the error tree: test_error_tree.py)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import zeroshot_kernel
from zeroshot_kernel import Client, LedgerError, LedgerUnavailable, Unavailable, ZeroshotError

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]


def _fresh(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def test_the_public_names_import_in_a_fresh_process_and_the_package_stays_light() -> None:
    heavy = ("sqlalchemy", "httpx", "IPython")
    probe = f"import sys, zeroshot_kernel; print([m for m in {heavy!r} if m in sys.modules])"
    assert _fresh(probe) == "[]"
    shown = _fresh(
        "import sys; from zeroshot_kernel import Client, Run, ZeroshotError; "
        "print(Client.__name__, Run.__name__, ZeroshotError.__name__, "
        f"[m for m in {heavy[1:]!r} if m in sys.modules])"
    )
    assert shown == "Client Run ZeroshotError []"


def test_every_name_in_all_resolves() -> None:
    for name in zeroshot_kernel.__all__:
        assert getattr(zeroshot_kernel, name) is not None, name
    assert callable(zeroshot_kernel.load_ipython_extension)
    with pytest.raises(AttributeError):
        _ = zeroshot_kernel.NoSuchThing  # type: ignore[attr-defined]


def _workspace(tmp_path: Path) -> Path:
    """A workspace: a folder marked by an (empty) ``.zeroshot/``."""
    (tmp_path / ".zeroshot").mkdir(parents=True)
    return tmp_path


def _list(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ZEROSHOT_LEDGER", "ZEROSHOT_TARGET")}
    return subprocess.run(
        [*ZEROSHOT, "list", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_reading_a_workspace_without_a_ledger_creates_nothing(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with Client(workspace=str(workspace)) as client:
        assert client.runs() == []
    listed = _list(workspace)
    assert listed.returncode == 0, listed.stderr
    assert "no runs" in listed.stdout.lower()
    assert list((workspace / ".zeroshot").iterdir()) == []  # no ledger file


def test_listing_works_in_a_read_only_workspace(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    marker = str(workspace / ".zeroshot")
    made = subprocess.run(["chattr", "+i", marker], capture_output=True, text=True)
    if made.returncode != 0:  # tests run as root: only the immutable flag stops writes
        pytest.skip(f"chattr +i failed: {made.stderr.strip()}")
    try:
        listed = _list(workspace)
    finally:
        subprocess.run(["chattr", "-i", marker], check=True)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr


def _open_files(path: Path) -> int:
    """How many of this process's file descriptors refer to ``path`` (or its -wal/-shm)."""
    names = {str(path), f"{path}-wal", f"{path}-shm"}
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += os.readlink(fd) in names
        except OSError:
            continue
    return count


def test_the_first_write_creates_the_ledger_and_the_context_managers_close_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    with Client(str(path), workspace=str(tmp_path)) as client:
        assert client.runs() == []
        assert not path.exists()
        client.ledger.create_run({"graph": {}}, title="one")
        assert [s.title for s in client.runs()] == ["one"]
        assert _open_files(path) > 0
    assert _open_files(path) == 0

    async def use() -> list[str]:
        async with Client(str(path), workspace=str(tmp_path)) as client:
            titles = [s.title for s in await client.aruns()]
            assert _open_files(path) > 0
        return titles

    assert asyncio.run(use()) == ["one"]
    assert _open_files(path) == 0
    # nobody holds the database: an exclusive lock is granted at once
    with sqlite3.connect(path, timeout=0) as database:
        database.execute("BEGIN EXCLUSIVE")
        database.rollback()


@pytest.mark.parametrize("damage", ["a directory", "corrupt"])
def test_an_unusable_ledger_is_a_ledger_error_and_one_line_in_the_cli(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "ledger.db"
    if damage == "a directory":
        path.mkdir()
    else:
        path.write_bytes(os.urandom(8192))
    with pytest.raises(LedgerUnavailable) as raised:
        Client(f"sqlite:///{path}", workspace=str(tmp_path)).runs()
    assert isinstance(raised.value, LedgerError) and isinstance(raised.value, Unavailable)
    assert isinstance(raised.value, ZeroshotError)
    listed = _list(_workspace(tmp_path / "ws"), "--ledger", f"sqlite:///{path}")
    assert listed.returncode == 2
    assert "Traceback" not in listed.stderr
    [line] = listed.stderr.splitlines()
    assert line.startswith(f"error: ledger {path}")
