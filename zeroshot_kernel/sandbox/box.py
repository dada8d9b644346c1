"""Running one process in a box: the policy for a folder, the command line, the limits.

Callers describe what a process needs (:func:`folder_policy`), open a :class:`Box` for it
(``with Box.open(policy, containment) as box``), start the process with ``box.spawn(argv,
stdout=...)`` (or :meth:`Box.spawn_async`), and ask :meth:`Box.exceeded` afterwards which
limit, if any, stopped it. Under ``--sandbox none`` the same calls run the process as it is
(``box.contained`` is ``False``) with the same environment allow-list, and the caller marks
what it records as UNCONTAINED.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from zeroshot_kernel.processes import AsyncChild, Child, spawn, spawn_async
from zeroshot_kernel.sandbox import bwrap
from zeroshot_kernel.sandbox.egress import RELAY, EgressProxy, endpoints
from zeroshot_kernel.sandbox.limits import LimitPlan
from zeroshot_kernel.sandbox.policy import (
    DEFAULT_MODE,
    BoxPolicy,
    Limits,
    SandboxMode,
    home_credentials,
)

RUN_DIR = ".zeroshot"
WORKTREES = Path(RUN_DIR) / "worktrees"


@dataclass(frozen=True)
class Containment:
    """What every box of a run needs from its controller: whether to box at all, the
    user's workspace (whose ``.zeroshot/`` no box sees) and the ledger's file, if any."""

    mode: SandboxMode = DEFAULT_MODE
    workspace_root: Path | None = None
    ledger_path: Path | None = None

    @property
    def contained(self) -> bool:
        return self.mode != "none"

    def to_wire(self) -> dict[str, str]:
        wire: dict[str, str] = {"mode": self.mode}
        if self.workspace_root is not None:
            wire["workspaceRoot"] = str(self.workspace_root)
        if self.ledger_path is not None:
            wire["ledgerPath"] = str(self.ledger_path)
        return wire

    @classmethod
    def from_wire(cls, wire: Mapping[str, str] | None) -> Containment:
        wire = wire or {}
        mode: SandboxMode = "none" if wire.get("mode") == "none" else "bwrap"
        root, ledger = wire.get("workspaceRoot"), wire.get("ledgerPath")
        return cls(mode, Path(root) if root else None, Path(ledger) if ledger else None)


def user_root(folder: Path) -> Path | None:
    """The user's workspace when ``folder`` is a run's worktree below its ``.zeroshot/``."""
    real = Path(os.path.realpath(folder))
    for parent in real.parents:
        if parent.name == RUN_DIR and parent.parent / WORKTREES in (real, *real.parents):
            return parent.parent
    return None


PRIVATE_TMP = Path("/tmp")
"""Every box has a ``/tmp`` of its own: what lies below the machine's is not there."""
INSTALLATION = Path(__file__).resolve().parents[2]
"""The folder holding this package (a source tree for an editable install, site-packages
otherwise): the engine's own scripts that boxes run (a warm interpreter) live there."""


def _toolchains(env: Mapping[str, str], hidden: Sequence[Path]) -> list[Path]:
    """Interpreters and tools that a hidden folder or the private ``/tmp`` would take away
    (a virtual environment inside the user's checkout, this installation in a clone below
    ``/tmp``), from PATH and this interpreter's own prefixes: shown again, read-only."""
    wanted: list[Path] = []
    gone = [*hidden, PRIVATE_TMP]
    entries = [
        *env.get("PATH", "").split(os.pathsep),
        env.get("VIRTUAL_ENV", ""),
        sys.prefix,
        sys.base_prefix,
        str(INSTALLATION),
    ]
    for entry in filter(None, entries):
        path = Path(os.path.realpath(entry))
        if not any(hide == path or hide in path.parents for hide in gone):
            continue
        venv = next((p for p in (path, *path.parents) if (p / "pyvenv.cfg").is_file()), None)
        wanted.append(venv or path)
    return list(dict.fromkeys(wanted))


def folder_policy(
    folder: Path,
    containment: Containment,
    *,
    env: Mapping[str, str],
    network: bool = False,
    egress: Iterable[str] = (),
    writable: bool = True,
    limits: Limits | None = None,
    show: Iterable[Path] = (),
    also_writable: Iterable[Path] = (),
    devices: Iterable[Path] = (),
    cwd: Path | None = None,
) -> BoxPolicy:
    """The box of a process working in ``folder`` (an agent's workspace or worktree, a
    check's tree, an experiment's copy): that folder writable (or, for a reviewer, not),
    its ``.git`` and ``.zeroshot/`` read-only, the user's ``.zeroshot/`` and ledger hidden,
    the user's checkout hidden when ``folder`` is a worktree of it (its ``.git`` shown
    read-only for git), the home directory's credentials hidden. ``show``: paths shown
    again read-only (a CLI's binary below the private ``/tmp``); ``also_writable``: paths
    writable besides ``folder`` (an agent CLI's own configuration folder)."""
    real = Path(os.path.realpath(folder))
    hidden: list[Path] = list(home_credentials())
    read_only: list[Path] = [real / ".git", real / RUN_DIR, *show]
    checkout = user_root(real)
    root = containment.workspace_root or checkout
    if root is not None:
        hidden.append(root / RUN_DIR)
    if checkout is not None:
        hidden.append(checkout)
        read_only.append(checkout / ".git")
    ledger = containment.ledger_path
    if ledger is not None:
        hidden += [ledger.with_name(ledger.name + suffix) for suffix in ("", "-wal", "-shm")]
    hidden = [path for path in hidden if path != real]
    read_only = [path for path in read_only if path not in hidden]
    read_only += _toolchains(env, hidden)
    if not writable:
        read_only.append(real)
    return BoxPolicy(
        writable=(real, *(Path(os.path.realpath(p)) for p in also_writable)),
        cwd=cwd or real,
        env=dict(env),
        read_only=tuple(read_only),
        hidden=tuple(hidden),
        network=network,
        egress=tuple(egress),
        limits=limits or Limits(),
        devices=tuple(devices),
    )


@dataclass
class Box:
    """One process's box, or its absence under ``--sandbox none``."""

    policy: BoxPolicy
    contained: bool
    binary: str | None = None
    plan: LimitPlan | None = field(default=None, repr=False)
    proxy: EgressProxy | None = field(default=None, repr=False)
    """The allow-list proxy of a box with ``egress`` (its only way out), while it is open."""

    @classmethod
    def open(cls, policy: BoxPolicy, containment: Containment) -> Box:
        """Prepare the box (its cgroups, its egress proxy); raises ``SandboxUnavailable``
        when the run wants one and none can be made. Uncontained, a box with ``egress``
        has the machine's network, as every uncontained process has."""
        if not containment.contained:
            return cls(policy, contained=False)
        binary = bwrap.require()
        plan = LimitPlan.make(policy.limits)
        if policy.network or not policy.egress:
            return cls(policy, contained=True, binary=binary, plan=plan)
        proxy = EgressProxy.start(endpoints(policy.egress))
        shown = dataclasses.replace(
            policy, read_only=(*policy.read_only, proxy.folder, RELAY.parent)
        )
        return cls(shown, contained=True, binary=binary, plan=plan, proxy=proxy)

    @property
    def env(self) -> dict[str, str]:
        return dict(self.policy.env)

    @property
    def cwd(self) -> Path:
        return self.policy.cwd

    def argv(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        if not self.contained or self.binary is None:
            return [str(part) for part in argv]
        if self.proxy is not None:
            relay = [sys.executable, "-I", str(RELAY), str(self.proxy.socket_path), "--"]
            argv = [*relay, *argv]
        return bwrap.command(self.policy, argv, self.binary)

    def spawn(
        self, argv: Sequence[str | os.PathLike[str]], *, outside: Sequence[str] = (), **options: Any
    ) -> Child:
        """Start ``argv`` in the box (:func:`~zeroshot_kernel.processes.spawn`, in its
        folder, with its environment and limits); ``outside`` runs first, outside the box
        (a guard that watches the controller). Raises ``OSError`` when it cannot start."""
        return spawn(
            [*outside, *self.argv(argv)],
            cwd=self.cwd,
            env=self.env,
            preexec=self.preexec,
            **options,
        )

    async def spawn_async(
        self, argv: Sequence[str | os.PathLike[str]], *, outside: Sequence[str] = (), **options: Any
    ) -> AsyncChild:
        """:meth:`spawn` for asyncio (:func:`~zeroshot_kernel.processes.spawn_async`)."""
        return await spawn_async(
            [*outside, *self.argv(argv)],
            cwd=self.cwd,
            env=self.env,
            preexec=self.preexec,
            **options,
        )

    def preexec(self) -> None:
        """Run in the child between fork and exec (see :meth:`LimitPlan.apply`)."""
        if self.plan is not None:
            self.plan.apply()

    @property
    def limits(self) -> dict[str, str]:
        """The limits as enforced, for receipts (empty when uncontained)."""
        return self.plan.enforced if self.plan is not None else {}

    def exceeded(self, exit_code: int | None, output: str = "") -> str | None:
        """The limit that stopped the box, if one did (see :meth:`LimitPlan.exceeded`)."""
        return self.plan.exceeded(exit_code, output) if self.plan is not None else None

    def close(self) -> None:
        if self.plan is not None:
            self.plan.close()
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None

    def __enter__(self) -> Box:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
