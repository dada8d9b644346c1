"""Running an agent CLI (``claude``, ``codex``) as a killable subprocess.

Each invocation is an asyncio subprocess in its own process group (a new session), so
whatever the agent starts (shells, test runners, language servers) is killed with it:
on a timeout or a stop the controller cancels the execution and the whole group gets
SIGKILL; after a normal exit, stragglers left in the group are killed too. The group's
leader is a tiny guard process that also kills it if the controller itself dies.

The prompt goes in on stdin (never on the command line, where ``ps`` would show it).
The child's environment is a small allow-list of this process's variables (locale, home,
path, the CLI's own configuration directory) plus the values of the names the node
declares; other secrets of the controller's environment never reach the agent.

The CLI and every tool it runs are boxed (:mod:`zeroshot_kernel.sandbox`): the box has no
network, only the hosts of the CLI's model API through an allow-list proxy outside it
(:mod:`zeroshot_kernel.sandbox.egress`; ``$ZEROSHOT_AGENT_EGRESS`` adds hosts), the
execution's folder is writable for a step and read-only for a verifier, the CLI's own
configuration folder (its login and sessions) is writable, and nothing else of the machine
can be changed: not ``.git``, not ``.zeroshot/``, not the ledger, not the home directory,
whose other credentials are not even visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zeroshot_kernel.contract.graph import VerifierNode
from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.exceptions import Unavailable
from zeroshot_kernel.harness.agent_guard import CANNOT_START, CANNOT_START_MARK
from zeroshot_kernel.harness.base import ExecutionRequest, HarnessResult, LogSink
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.processes import PIPE, STDOUT, allowed_env, read_lines, spawn_async
from zeroshot_kernel.sandbox import Box, Containment, Limits, SandboxUnavailable, folder_policy
from zeroshot_kernel.sandbox.egress import endpoints
from zeroshot_kernel.sandbox.policy import GiB

GUARD = Path(__file__).with_name("agent_guard.py")
EGRESS_ENV = "ZEROSHOT_AGENT_EGRESS"
"""Hosts every agent CLI's box may reach besides its model API (a corporate gateway)."""
_STDERR_TAIL = 20
_DRAIN_S = 2.0
_VERSION_TIMEOUT_S = 10.0

BASE_ENV_NAMES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TMPDIR",
    "TZ",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
"""Variables of the controller's environment every agent CLI gets (none is a secret)."""

_AUTH_PROBLEM = re.compile(
    r"invalid[ _-]?api[ _-]?key|api key|authenticat|unauthori[sz]ed|\b401\b|not logged in|"
    r"please run /login|login required|credentials|oauth|(token|session|login) (has )?expired|"
    r"expired (token|session|login)",
    re.IGNORECASE,
)


class CliMissing(FileNotFoundError, Unavailable):
    """The agent CLI binary is not installed where it was looked for. (The ``OSError`` base
    first: behind ``RuntimeError`` it would leave ``errno`` and ``filename`` unset.)"""


AGENT_LIMITS = Limits(
    memory_bytes=16 * GiB, processes=2048, file_size_bytes=4 * GiB, address_space_fallback=False
)
"""An agent CLI (Node.js) reserves far more address space than it uses: memory is limited by
cgroup only."""


@dataclass(frozen=True)
class AgentCli:
    """Where one agent CLI is found: ``$<env_var>`` if set, else ``name`` on PATH."""

    name: str
    env_var: str
    config_env_names: tuple[str, ...] = ()
    """The CLI's own configuration/login variables, passed through when set."""
    config_dir_env: str | None = None
    """The variable naming the CLI's configuration folder (its login, its sessions)."""
    config_paths: tuple[str, ...] = ()
    """Its configuration folder and files below the home directory, when the variable is
    not set (``.claude``, ``.claude.json``)."""
    api_hosts: tuple[str, ...] = ()
    """The hosts its box may reach (through the egress proxy): its model API's."""
    base_url_envs: tuple[str, ...] = ()
    """Variables that point it at another API (a gateway, a provider): their hosts too."""

    def egress(self, env: Mapping[str, str], extra: Iterable[str] = ()) -> tuple[str, ...]:
        """The ``host:port`` its box may reach: its model API's, those of the base URLs in
        ``env``, ``extra`` (a provider's URL) and what the user adds in
        ``$ZEROSHOT_AGENT_EGRESS`` (hosts, ``host:port`` or URLs, comma-separated)."""
        added = os.environ.get(EGRESS_ENV, "").replace(",", " ").split()
        urls = [env[name] for name in self.base_url_envs if env.get(name)]
        return tuple(str(e) for e in endpoints([*self.api_hosts, *urls, *extra, *added]))

    def config(self, env: Mapping[str, str]) -> list[Path]:
        """The CLI's own configuration paths that exist: the only place outside its
        folder its box lets it write."""
        configured = env.get(self.config_dir_env or "")
        if configured:
            return [Path(configured)] if os.path.isdir(configured) else []
        home = Path(env.get("HOME") or os.path.expanduser("~"))
        return [home / name for name in self.config_paths if os.path.exists(home / name)]

    def binary(self) -> str | None:
        """The executable to run, or None when there is none."""
        configured = os.environ.get(self.env_var)
        if configured:
            return configured if _executable(configured) else None
        return shutil.which(self.name)

    def missing_detail(self) -> str:
        configured = os.environ.get(self.env_var)
        if configured:
            return (
                f"the {self.name} CLI was not found: {self.env_var} names {configured}, "
                "which is not an executable file"
            )
        return (
            f"the {self.name} CLI was not found: install it, put it on PATH, or set "
            f"{self.env_var} to its path"
        )

    async def version(self) -> str | None:
        """``<cli> --version``, or None when not installed or not answering."""
        binary = self.binary()
        if binary is None:
            return None
        try:
            child = await spawn_async([binary, "--version"], stderr=STDOUT)
        except OSError:
            return None
        try:
            output, _ = await asyncio.wait_for(child.process.communicate(), _VERSION_TIMEOUT_S)
        except TimeoutError:
            await child.terminate()
            return None
        if child.returncode != 0:
            return None
        text = output.decode(errors="replace").strip()
        return text.splitlines()[0] if text else "unknown version"


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@dataclass
class CliRun:
    """A finished invocation: exit code, stdout lines, the last stderr lines."""

    returncode: int
    stdout: list[str] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)

    def stderr_text(self) -> str:
        return " | ".join(line for line in self.stderr_tail if line.strip())


def agent_env(
    request: ExecutionRequest, cli: AgentCli, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The child's environment: the allow-list, the CLI's config, the node's values."""
    return child_env(cli, {**request.env, **(extra or {})})


def child_env(cli: AgentCli, values: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed variables of this process, the CLI's own, then ``values``."""
    return allowed_env((*BASE_ENV_NAMES, *cli.config_env_names), values)


def agent_box(
    request: ExecutionRequest, cli: AgentCli, env: Mapping[str, str], egress: Iterable[str] = ()
) -> Box:
    """The box of one invocation of ``cli`` for ``request`` (see the module doc); raises
    :class:`SandboxUnavailable` when the run wants a box and none can be made."""
    writable = not isinstance(request.node, VerifierNode)
    return cli_box(
        cli, request.workspace, request.containment, env, writable=writable, egress=egress
    )


def cli_box(
    cli: AgentCli,
    folder: Path,
    containment: Containment,
    env: Mapping[str, str],
    *,
    writable: bool,
    egress: Iterable[str] = (),
) -> Box:
    """The box of ``cli`` working in ``folder``: its model API's hosts (and ``egress``,
    through the egress proxy), its configuration folder and (when ``writable``) ``folder``
    are all it may use besides reading the machine."""
    binary = cli.binary()
    policy = folder_policy(
        folder,
        containment,
        env={**env, "TMPDIR": "/tmp"},
        egress=cli.egress(env, egress),
        writable=writable,
        limits=AGENT_LIMITS,
        show=[Path(binary)] if binary else [],
        also_writable=cli.config(env),
    )
    return Box.open(policy, containment)


def box_refusal(unavailable: SandboxUnavailable) -> HarnessResult:
    """No box for a run that wants one: refused, never run uncontained."""
    return HarnessResult(error("refusal"), str(unavailable))


async def run_cli(
    argv: Sequence[str],
    *,
    stdin: str,
    box: Box,
    log: LogSink,
) -> CliRun:
    """Run one invocation in ``box`` to its end; cancelled, it kills the whole process group.

    The CLI runs under :mod:`agent_guard` (the group's leader, outside the box), which kills
    the group if this process dies. Raises :class:`CliMissing` when the binary cannot be
    started; a limit of the box that stopped it, and each host its egress proxy refused, are
    said on its last stderr lines (and the refusals in the log)."""
    try:
        child = await box.spawn_async(argv, outside=[sys.executable, "-I", str(GUARD)], stdin=PIPE)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as missing:
        raise CliMissing(str(missing)) from missing
    process = child.process
    result = CliRun(returncode=0)
    tasks: list[asyncio.Task[None]] = []
    try:
        tasks = [
            asyncio.create_task(_read_stdout(process, result)),
            asyncio.create_task(_read_stderr(process, result, log)),
            asyncio.create_task(_feed(process, stdin)),
        ]
        result.returncode = await child.exited()
        # The leader is gone; anything it left in its group goes with it, so that pipes
        # held open by stragglers cannot keep the readers waiting.
        await child.terminate()
        done, pending = await asyncio.wait(tasks, timeout=_DRAIN_S)
        for task in pending:
            task.cancel()
        for task in done:
            task.result()
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.shield(child.terminate())
        raise
    if result.returncode == CANNOT_START and any(
        line.startswith(CANNOT_START_MARK) for line in result.stderr_tail
    ):
        raise CliMissing(result.stderr_text())
    limit = box.exceeded(result.returncode, "\n".join(result.stderr_tail))
    if limit is not None:
        result.stderr_tail.append(f"{RESOURCE_LIMIT}: the agent's box hit its {limit} limit")
    for host in box.proxy.refused() if box.proxy is not None else []:
        line = f"{EGRESS_REFUSED}: {host} is not on the allow-list of the agent's box"
        log("error", f"{line} ({EGRESS_ENV} adds hosts)")
        result.stderr_tail.append(line)
    return result


RESOURCE_LIMIT = "resource_limit"
EGRESS_REFUSED = "egress_refused"


async def _feed(process: asyncio.subprocess.Process, text: str) -> None:
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(text.encode())
        await process.stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.close()


async def _read_stdout(process: asyncio.subprocess.Process, result: CliRun) -> None:
    await read_lines(process.stdout, result.stdout.append)


async def _read_stderr(process: asyncio.subprocess.Process, result: CliRun, log: LogSink) -> None:
    def keep(text: str) -> None:
        result.stderr_tail = [*result.stderr_tail[-(_STDERR_TAIL - 1) :], text]
        if text:
            log("error", text)

    await read_lines(process.stderr, keep)


def looks_like_auth_problem(*texts: str | None) -> bool:
    return any(text and _AUTH_PROBLEM.search(text) for text in texts)


def auth_refusal(detail: str) -> HarnessResult:
    return HarnessResult(error("refusal", "authentication_required"), detail[:1000])


def crash(detail: str) -> HarnessResult:
    return HarnessResult(error("crash"), detail[:1000])


def missing_cli(cli: AgentCli) -> HarnessResult:
    """A missing binary is not transient: refuse (no retry) and say how to fix it."""
    return HarnessResult(error("refusal"), cli.missing_detail())


def model_of(request: ExecutionRequest) -> str | None:
    binding = request.binding
    own = binding.model if isinstance(binding, AgentBinding) else None
    return own or request.plan.model


def effort_of(request: ExecutionRequest) -> str | None:
    binding = request.binding
    own = binding.effort if isinstance(binding, AgentBinding) else None
    return own or request.plan.effort


def provider_of(request: ExecutionRequest, default: str) -> str:
    binding = request.binding
    own = binding.provider if isinstance(binding, AgentBinding) else None
    return own or request.plan.provider or default
