"""What a box lets a process see, write, reach and use (the data; :mod:`.bwrap` enforces it).

A policy names paths by what the box does with them: the one folder a process may write,
paths inside it that stay read-only (a worktree's ``.git`` pointer, ``.zeroshot/``), paths
hidden altogether (the ledger, the user's checkout, credentials in the home directory) and
paths shown again, read-only, below a hidden one (the repository's ``.git`` below a hidden
checkout, the CLI binary below a private ``/tmp``). The environment is given whole: a boxed
process sees no variable the caller did not put in it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SandboxMode = Literal["bwrap", "none"]
"""``bwrap``: model-written code runs in a bubblewrap box (the default; refused where no box
can be made). ``none``: it runs with the user's full powers, shown as UNCONTAINED."""
SANDBOX_MODES: tuple[SandboxMode, ...] = ("bwrap", "none")
DEFAULT_MODE: SandboxMode = "bwrap"


def sandbox_mode(text: str | None) -> SandboxMode | None:
    """``text`` as a sandbox mode (``None`` stays ``None``: the default); ``ValueError``
    names the choices."""
    if text is None:
        return None
    for mode in SANDBOX_MODES:
        if text == mode:
            return mode
    raise ValueError(f"sandbox {text!r} is not one of {', '.join(SANDBOX_MODES)}")


UNCONTAINED = "UNCONTAINED"
"""How receipts, ``status``, ``research show`` and final lines mark a run without a box."""

MiB = 1024 * 1024
GiB = 1024 * MiB

CREDENTIAL_PATHS = (
    ".ssh",
    ".aws",
    ".azure",
    ".netrc",
    ".git-credentials",
    ".gitconfig",
    ".config/git",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/doctl",
    ".gnupg",
    ".docker",
    ".kube",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".claude",
    ".claude.json",
    ".codex",
    ".config/anthropic",
    ".config/openai",
    ".local/share/keyrings",
    ".password-store",
)
"""Files and folders of the home directory no box ever sees (an agent CLI's own login is
shown again to that CLI's box only)."""

BASE_ENV_NAMES = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM")
"""Variables of the caller's environment every box gets (none is a secret)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one box; ``None`` leaves one unlimited.

    Memory is enforced by a memory cgroup where one can be made, else per process as an
    address-space limit (``address_space_fallback``: off for GPU work, whose driver maps
    far more address space than it uses)."""

    memory_bytes: int | None = 8 * GiB
    processes: int | None = 512
    file_size_bytes: int | None = 2 * GiB
    cpu_seconds: int | None = None
    address_space_fallback: bool = True


@dataclass(frozen=True)
class BoxPolicy:
    """Everything :func:`zeroshot_kernel.sandbox.bwrap.command` needs to box one process."""

    writable: tuple[Path, ...]
    """The process's own folder(s): the only places it can write (besides a private /tmp)."""
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The whole environment of the boxed process."""
    read_only: tuple[Path, ...] = ()
    """Read-only although inside a writable folder, or shown again below a hidden path."""
    hidden: tuple[Path, ...] = ()
    """Not visible at all: an empty folder (or empty file) stands in their place."""
    network: bool = False
    """The machine's network; without it, the box has only its own loopback."""
    egress: tuple[str, ...] = ()
    """Without the network: hosts (``host:port``) the box may still reach, through an
    allow-list proxy outside it (:mod:`zeroshot_kernel.sandbox.egress`)."""
    limits: Limits = field(default_factory=Limits)
    devices: tuple[Path, ...] = ()
    """Device nodes bound into the box (a GPU's ``/dev/nvidia*``)."""


def box_env(values: Mapping[str, str], *, names: Iterable[str] = ()) -> dict[str, str]:
    """A box's environment: :data:`BASE_ENV_NAMES` and ``names`` from this process (when
    set), a private ``/tmp``, then ``values``."""
    env = {name: os.environ[name] for name in (*BASE_ENV_NAMES, *names) if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["TMPDIR"] = "/tmp"
    env.update(values)
    return env


def home_credentials(home: Path | None = None) -> tuple[Path, ...]:
    """The credential paths of ``home`` (default: this user's) that exist."""
    root = home or Path(os.path.expanduser("~"))
    return tuple(root / name for name in CREDENTIAL_PATHS if os.path.lexists(root / name))
