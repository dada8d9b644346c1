"""A throwaway PostgreSQL server for the tests, started by the suite and always stopped.

Each test process (so each pytest-xdist worker) starts at most one server, on first use:
``initdb`` into a temp dir, then ``pg_ctl start`` listening only on 127.0.0.1 on a free port,
with its unix socket in the same temp dir. As root both run as the ``postgres`` user (initdb
refuses root), which then owns the temp dir. Every test gets a database of its own, created
empty and dropped afterwards (``WITH (FORCE)``, so connections a failed test left open do
not keep it).

The server is stopped by pytest's cleanup at the end of the session, by ``atexit`` if the
session ends another way, and, should the test process be killed outright, by a watchdog
process that outlives it only to stop the server and remove its files.

The data dir is in /dev/shm where there is one, and durability is switched off (``fsync``,
``synchronous_commit``, ``full_page_writes``): the data dir is thrown away, and the suite is
faster for it. Locking and isolation, what the ledger tests exercise, are unchanged.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BIN_DIR_ENV = "ZEROSHOT_PG_BIN"
"""Where ``initdb`` and ``pg_ctl`` are, when not in /usr/lib/postgresql/<version>/bin."""
SERVER_USER = "postgres"
PASSWORD_GROUP = "zeroshot_password_logins"
"""Members of this role must log in over TCP with their password (scram-sha-256); every
other role is trusted."""
"""The OS user the server runs as when the tests run as root; also the database superuser."""
START_TIMEOUT_S = 60
START_ATTEMPTS = 3  # a fresh port each time: another process may take the free one first
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
}

_WATCHDOG = """\
import os, subprocess, sys, time, shutil
parent, data, root, *command = sys.argv[1:]
while True:
    try:
        os.kill(int(parent), 0)
    except ProcessLookupError:
        break
    time.sleep(1)
subprocess.run([*command, "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True)
shutil.rmtree(root, ignore_errors=True)
"""


class ServerError(RuntimeError):
    """The test PostgreSQL could not be started."""


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, if there is one."""
    candidates: list[Path] = []
    if os.environ.get(BIN_DIR_ENV):
        candidates.append(Path(os.environ[BIN_DIR_ENV]))
    installed = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(installed, key=_major_version, reverse=True)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for candidate in candidates:
        if all((candidate / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return candidate
    return None


def missing_reason() -> str | None:
    """Why no test PostgreSQL can be started here, or None if one can."""
    if find_bin_dir() is None:
        return (
            "PostgreSQL server binaries (initdb, pg_ctl) not found in "
            f"/usr/lib/postgresql/*/bin, ${BIN_DIR_ENV} or PATH; install postgresql"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]>=3.1')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root but there is no {SERVER_USER!r} user to run the server as"
        if shutil.which("runuser") is None:
            return "running as root but runuser is missing"
    return None


class PostgresServer:
    """One running server in its own temp dir; ``stop`` is idempotent."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="zeroshot-pg-", dir=_scratch_dir()))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self._owner_pid = os.getpid()
        self._admin: Any = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """initdb and start; on failure everything made so far is removed again."""
        atexit.register(self.stop)
        try:
            # First, so that no moment passes with a server but no watchdog.
            self._watchdog = self._start_watchdog()
            if os.geteuid() == 0:
                record = pwd.getpwnam(SERVER_USER)
                os.chown(self.root, record.pw_uid, record.pw_gid)
            self.root.chmod(0o700)
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                SERVER_USER,
                "--no-sync",
                "--no-instructions",
                "--encoding=UTF8",
                "--locale=C",
            )
            self._require_passwords_of(PASSWORD_GROUP)
            self._start_listening()
        except BaseException:
            self.stop()
            raise

    def _require_passwords_of(self, group: str) -> None:
        """First-match rule ahead of initdb's trust lines (as the file's owner wrote it)."""
        hba = self.data / "pg_hba.conf"
        rule = f"host all +{group} 127.0.0.1/32 scram-sha-256\n"
        stat = hba.stat()
        hba.write_text(rule + hba.read_text())
        os.chown(hba, stat.st_uid, stat.st_gid)

    def _start_listening(self) -> None:
        for attempt in range(1, START_ATTEMPTS + 1):
            self.port = _free_port()
            options = " ".join(
                [f"-p {self.port}", f"-k {self.root}"]
                + [f"-c {name}={value}" for name, value in SETTINGS.items()]
            )
            started = self._run(
                "pg_ctl",
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-o",
                options,
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "start",
                check=False,
            )
            if started.returncode == 0:
                return
            self._stop_postmaster()  # in case it came up after all, on a port now forsaken
            if attempt == START_ATTEMPTS:
                raise ServerError(
                    f"pg_ctl start failed ({started.stdout.strip()}); server log:\n"
                    + _tail(self.log)
                )

    def _start_watchdog(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WATCHDOG,
                str(os.getpid()),
                str(self.data),
                str(self.root),
                *self._command("pg_ctl"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )

    def stop(self) -> None:
        """Stop the server and remove its files (only in the process that started it)."""
        if os.getpid() != self._owner_pid:
            return
        atexit.unregister(self.stop)
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None
        self._stop_postmaster()
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        shutil.rmtree(self.root, ignore_errors=True)

    def _stop_postmaster(self) -> None:
        if not (self.data / "postmaster.pid").exists():
            return
        for mode in ("fast", "immediate"):
            stopped = self._run(
                "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False
            )
            if stopped.returncode == 0:
                return

    # -- databases ----------------------------------------------------------------------

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A fresh, empty database for one test, dropped afterwards; yields its URL."""
        name = f"test_{uuid.uuid4().hex[:16]}"
        self._execute(f'CREATE DATABASE "{name}"')
        try:
            yield self.url(name)
        finally:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @contextlib.contextmanager
    def password_database(self) -> Iterator[str]:
        """A fresh database owned by a role that must give its password; yields a URL
        carrying that password (both dropped afterwards)."""
        role, password = f"zs_{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
        self._execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
            f"'{PASSWORD_GROUP}') THEN CREATE ROLE {PASSWORD_GROUP} NOLOGIN; "
            f"END IF; END $$"
        )
        self._execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE {PASSWORD_GROUP}")
        self._execute(f'CREATE DATABASE "{role}" OWNER {role}')
        try:
            yield f"postgresql+psycopg://{role}:{password}@127.0.0.1:{self.port}/{role}"
        finally:
            self._execute(f'DROP DATABASE IF EXISTS "{role}" WITH (FORCE)')
            self._execute(f"DROP ROLE IF EXISTS {role}")

    def _execute(self, sql: str) -> None:
        import psycopg

        if self._admin is None or self._admin.closed:
            self._admin = psycopg.connect(
                host="127.0.0.1",
                port=self.port,
                user=SERVER_USER,
                dbname="postgres",
                autocommit=True,
            )
        self._admin.execute(sql)

    # -- plumbing -----------------------------------------------------------------------

    def _command(self, program: str) -> list[str]:
        binary = str(self.bin_dir / program)
        if os.geteuid() == 0:
            return ["runuser", "-u", SERVER_USER, "--", binary]
        return [binary]

    def _run(
        self, program: str, *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*self._command(program), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=self.root,
        )
        if check and result.returncode != 0:
            raise ServerError(f"{program} failed: {result.stdout}{result.stderr}")
        return result


_shared: PostgresServer | None = None
_failed: BaseException | None = None


def shared_server(
    register_cleanup: Callable[[Callable[[], None]], object] | None = None,
) -> PostgresServer:
    """This process's server, started on first call (check ``missing_reason`` first);
    ``register_cleanup`` is then handed the function that stops it."""
    global _shared, _failed
    if _failed is not None:
        raise ServerError(f"the test PostgreSQL failed to start earlier: {_failed}")
    if _shared is None:
        bin_dir = find_bin_dir()
        assert bin_dir is not None, missing_reason()
        server = PostgresServer(bin_dir)
        try:
            server.start()
        except Exception as error:
            _failed = error
            raise
        _shared = server
        if register_cleanup is not None:
            register_cleanup(stop_shared_server)
    return _shared


def stop_shared_server() -> None:
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None


def _scratch_dir() -> str | None:
    """A memory-backed temp dir where there is one: CREATE DATABASE there takes a hundredth
    of the time it takes on disk, even with fsync off."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _major_version(bin_dir: Path) -> int:
    match = re.fullmatch(r"\d+", bin_dir.parent.name)
    return int(match.group()) if match else 0


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"
