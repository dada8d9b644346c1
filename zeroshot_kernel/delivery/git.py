"""Hardened ``git`` for trusted code: it never runs what the other side of the box wrote.

A writer running as the user (an uncontained run, or one before the box existed) could
leave a hook in ``.git/hooks``, a ``core.hooksPath``/``core.fsmonitor`` in ``~/.gitconfig``
or an ``include.path`` file, a clean filter named by ``.git/info/attributes``, an askpass
or credential helper in the repository's config. Every git call of trusted code (the
trust check, the review snapshot, the briefs, the receipts, delivery) goes through
:func:`run_git` or :class:`Git`, which

- give git an environment allow-list (never the controller's environment wholesale) with
  ``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_CONFIG_GLOBAL=/dev/null``: no system or user config;
- override on the command line (which beats every config file) what could run a program:
  ``core.hooksPath=/dev/null``, ``core.fsmonitor=false``, ``core.attributesFile=/dev/null``,
  ``protocol.ext.allow=never``, ``core.askPass=`` and the credential helpers (reset), and
  every filter driver the repository's config names (its ``clean``/``smudge``/``process``
  emptied, which git takes as "no filter");
- leave the rest to the callers: ``--no-ext-diff``/``--no-textconv`` on diffs,
  ``--no-verify`` and explicit ``--receive-pack``/``--upload-pack`` on network calls.

Credentials for a push come from the controller's environment and reach git only
(:func:`push_credentials`): with ``GH_TOKEN`` set, a credential helper of ours answers it
for the remote's host; ssh keeps working as before (``HOME`` and ``SSH_AUTH_SOCK`` pass,
``ssh -o BatchMode=yes``). A user whose HTTPS pushes rely on a credential helper in
``~/.gitconfig`` (a keychain, ``store``, ``gh auth git-credential``) keeps it: without
``GH_TOKEN`` the *global* ``credential.helper`` values are read once and passed explicitly.
That file is hidden from every box (``sandbox.policy.CREDENTIAL_PATHS``), so what it names
is the user's own choice; the repository's helpers (in ``.git/config``, which an uncontained
writer could edit) are never used. The committer's identity is read the same way
(:func:`user_settings`): the repository's ``user.name``/``user.email``, else the user's.

Each call runs in its own process group so that a cancelled delivery (the node's timeout,
a stop) kills git and whatever it started (ssh, a credential helper); network calls get
their own deadline. A ``guarded`` call (a push) runs under
:mod:`zeroshot_kernel.harness.agent_guard`, which kills the group when the controller dies.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from zeroshot_kernel.exceptions import OperationFailed
from zeroshot_kernel.processes import spawn_async

LOCAL_TIMEOUT_S = 60.0
NETWORK_TIMEOUT_S = 300.0
GUARD = Path(__file__).resolve().parents[1] / "harness" / "agent_guard.py"
HARDENED_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "protocol.ext.allow=never",
    "core.askPass=",
    "credential.helper=",
)
"""Command-line settings of every trusted git call (see the module doc)."""
FIXED_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",  # fail instead of asking for a password nobody can type
    "GIT_ASKPASS": "",  # set and empty: git asks no program (core.askPass is not consulted)
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",  # also overrides core.sshCommand
    "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",  # reading never writes the index (another process may)
    "LC_ALL": "C",  # stable messages to classify
}
PASSED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
)
"""The controller's variables git gets (for ssh, TLS and proxies; none a credential)."""
TOKEN_ENV = "ZEROSHOT_GIT_TOKEN"
_TOKEN_HELPER = (
    '!f() { test "$1" = get && echo username=x-access-token && echo "password=$'
    + TOKEN_ENV
    + '"; }; f'
)
_FILTER_QUERY = ("config", "--null", "--name-only", "--get-regexp", r"^filter\.")
_USER_QUERY = (
    "config",
    "--null",
    "--show-scope",
    "--get-regexp",
    r"^(user\.name|user\.email|credential\.helper)$",
)


class GitError(OperationFailed):
    """A git command failed; ``stderr`` says why."""

    def __init__(self, args: tuple[str, ...], code: int | None, stderr: str) -> None:
        self.args_run = args
        self.code = code
        self.stderr = stderr.strip()
        last = self.stderr.splitlines()[-1] if self.stderr else f"exit code {code}"
        super().__init__(f"git {' '.join(args[:2])} failed: {last}")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """git's environment: :data:`PASSED_ENV` from this process, :data:`FIXED_ENV`, then
    ``extra`` (an identity, a temporary index, a push's token)."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    return {**env, **FIXED_ENV, **(extra or {})}


def _filter_overrides(listed: bytes) -> list[str]:
    """``-c`` settings emptying every filter driver named in ``listed`` (the output of
    :data:`_FILTER_QUERY`)."""
    drivers = {
        name.rsplit(".", 1)[0].removeprefix("filter.")
        for name in listed.decode(errors="replace").split("\0")
        if name.startswith("filter.") and name.count(".") >= 2
    }
    overrides: list[str] = []
    for driver in sorted(drivers):
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            overrides += ["-c", f"filter.{driver}.{key}={value}"]
    return overrides


def command(
    args: Sequence[str], overrides: Sequence[str] = (), config: Sequence[str] = ()
) -> list[str]:
    """``git`` with the hardened settings, the filter ``overrides``, then ``config``
    (``-c`` pairs of the caller: a push's credential helper) and ``args``."""
    settings = [part for item in HARDENED_CONFIG for part in ("-c", item)]
    return ["git", *settings, *overrides, *config, *args]


@dataclass(frozen=True)
class Credentials:
    """``-c`` settings and environment a network call adds (see :func:`push_credentials`)."""

    config: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False)


def _prepared(
    cwd: Path,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    timeout: float,
    credentials: Credentials | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The hardened command line of ``git <args>`` in ``cwd`` (its filter drivers read
    first) and its environment."""
    extra = credentials or Credentials()
    environment = git_env({**(env or {}), **extra.env})
    listed = subprocess.run(
        command(_FILTER_QUERY),
        cwd=cwd,
        env=environment,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )
    return command(args, _filter_overrides(listed.stdout), extra.config), environment


def run_git(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = LOCAL_TIMEOUT_S,
    credentials: Credentials | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``git <args>`` in ``cwd``, hardened (see the module doc), for synchronous trusted
    code; the caller judges the exit status. Raises ``subprocess.TimeoutExpired``."""
    argv, environment = _prepared(cwd, args, env, timeout, credentials)
    return subprocess.run(
        argv,
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


def open_git(
    cwd: Path, *args: str, stdin: IO[bytes], env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``git <args>`` started hardened with ``stdin`` (an open file) and its stdout a pipe,
    for output too large to hold (``cat-file --batch`` of a whole tree)."""
    argv, environment = _prepared(cwd, args, env, LOCAL_TIMEOUT_S)
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=environment,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


@dataclass(frozen=True)
class UserSettings:
    """What trusted git takes from the user's own configuration (see the module doc)."""

    identity: dict[str, str] = field(default_factory=dict)
    """``GIT_AUTHOR_*``/``GIT_COMMITTER_*`` when a name and an email are configured."""
    helpers: tuple[str, ...] = ()
    """The global ``credential.helper`` values, in order (an empty one resets)."""


def user_settings(cwd: Path) -> UserSettings:
    """The identity (repository config first, then the user's) and the user's global
    credential helpers. Reading configuration runs nothing."""
    env = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    done = subprocess.run(
        ["git", "--no-pager", *_USER_QUERY],
        cwd=cwd,
        env={**env, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"},
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=LOCAL_TIMEOUT_S,
        check=False,
    )
    found: dict[str, str] = {}
    helpers: list[str] = []
    items = done.stdout.decode(errors="replace").split("\0")
    for scope, entry in zip(items[::2], items[1::2], strict=False):  # scope NUL key LF value NUL
        key, _, value = entry.partition("\n")
        if key == "credential.helper":
            if scope == "global":
                helpers = [] if not value else [*helpers, value]
        elif key:
            found[key] = value
    name, email = found.get("user.name", ""), found.get("user.email", "")
    identity = {}
    if name and email:
        for role in ("AUTHOR", "COMMITTER"):
            identity[f"GIT_{role}_NAME"] = name
            identity[f"GIT_{role}_EMAIL"] = email
    return UserSettings(identity, tuple(helpers))


def push_credentials(url: str, token: str, helpers: Sequence[str]) -> Credentials:
    """How a network call to ``url`` authenticates: ``token`` (the controller's
    ``GH_TOKEN``) through our helper, for the URL's host only; else the user's global
    ``helpers``; ssh needs neither."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return Credentials()
    if token:
        host = parts.netloc.rsplit("@", 1)[-1]
        key = f"credential.{parts.scheme}://{host}.helper"
        return Credentials(("-c", f"{key}={_TOKEN_HELPER}"), {TOKEN_ENV: token})
    return Credentials(
        tuple(part for helper in helpers for part in ("-c", f"credential.helper={helper}"))
    )


@dataclass(frozen=True)
class Git:
    """Hardened git commands run in ``cwd`` (a work tree), with ``env`` added to git's
    environment (:func:`git_env`)."""

    cwd: Path
    env: Mapping[str, str] | None = None

    async def __call__(
        self,
        *args: str,
        timeout: float = LOCAL_TIMEOUT_S,
        check: bool = True,
        guarded: bool = False,
        credentials: Credentials | None = None,
    ) -> str:
        """stdout of ``git <args>``; raises :class:`GitError` on failure (unless not
        ``check``, then the output of a failed call is ``""``) or on timeout.
        ``guarded``: git dies with the controller (see the module doc); ``credentials``:
        a network call's authentication."""
        env = git_env({**(self.env or {}), **(credentials.env if credentials else {})})
        listed, _, _ = await self._run(command(_FILTER_QUERY), env, _FILTER_QUERY, timeout)
        argv = command(args, _filter_overrides(listed), credentials.config if credentials else ())
        program = [sys.executable, "-I", str(GUARD)] if guarded else []
        stdout, stderr, code = await self._run([*program, *argv], env, args, timeout)
        if code != 0:
            if not check:
                return ""
            raise GitError(args, code, stderr.decode(errors="replace"))
        return stdout.decode(errors="replace").strip()

    async def _run(
        self, argv: list[str], env: dict[str, str], args: Sequence[str], timeout: float
    ) -> tuple[bytes, bytes, int | None]:
        child = await spawn_async(argv, cwd=self.cwd, env=env)
        try:
            stdout, stderr = await asyncio.wait_for(child.process.communicate(), timeout)
        except TimeoutError:
            await child.terminate()
            raise GitError(tuple(args), None, f"no answer within {timeout:g} s") from None
        except BaseException:
            await asyncio.shield(child.terminate())
            raise
        return stdout, stderr, child.returncode
