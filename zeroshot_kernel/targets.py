"""Targets: named places where runs are admitted and recorded.

A target is a name for a ledger URL, kept in the workspace's ``.zeroshot/targets.json``
(readable by its owner only, since a URL may carry a password). ``local`` always exists:
the workspace's own SQLite file. A stored URL may name environment variables as
``${NAME}``, so that a password need not be written down at all; they are read each time
the target is used.

Which ledger a command uses: ``--ledger``, else ``--target``, else ``ZEROSHOT_LEDGER``,
else ``ZEROSHOT_TARGET``, else ``local``.

>>> redacted("postgresql://me:s3cret@db.example/runs")
'postgresql://me:***@db.example/runs'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.reading import shorten
from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.workspace import LEDGER_ENV, display_url, find_workspace, ledger_url

TARGET_ENV = "ZEROSHOT_TARGET"
LOCAL = "local"
TARGETS_FILE = Path(".zeroshot") / "targets.json"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TargetError(InvalidInput):
    """A target that is unknown, badly named, or whose URL cannot be completed."""


class Target(ContractModel):
    """A named ledger. ``ledger`` is the URL as stored (``${NAME}`` left unexpanded)."""

    name: str = Field(pattern=NAME_PATTERN)
    ledger: str

    @property
    def display_ledger(self) -> str:
        """The URL with any password hidden, for printing."""
        return redacted(self.ledger)

    def url(self) -> str:
        """The URL to connect with: environment references expanded."""

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise TargetError(f"target {self.name!r} needs the environment variable {name}")
            return os.environ[name]

        return _VARIABLE.sub(value, self.ledger)


class Targets:
    """The targets of one workspace."""

    def __init__(self, workspace: str | os.PathLike[str] | None = None) -> None:
        self.workspace = find_workspace(workspace)
        self.path = self.workspace / TARGETS_FILE

    def list(self) -> list[Target]:
        """``local`` first, then the added targets by name."""
        local = Target(name=LOCAL, ledger=ledger_url(None, self.workspace, use_env=False))
        return [local, *sorted(self._added().values(), key=lambda t: t.name)]

    def get(self, name: str) -> Target:
        for target in self.list():
            if target.name == name:
                return target
        known = ", ".join(t.name for t in self.list())
        raise TargetError(
            f"no target {name!r} in {self.workspace} (known: {known}); "
            f"add one with: zeroshot target add {name} --ledger URL"
        )

    def add(
        self,
        name: str,
        ledger: str,
        *,
        replace: bool = False,
        check: Callable[[Target], None] | None = None,
    ) -> Target:
        """Record ``name`` for ``ledger`` (a SQLAlchemy URL or SQLite file path), after
        ``check`` (which raises :class:`TargetError`) accepted it."""
        if name == LOCAL:
            raise TargetError(f"{LOCAL!r} is the workspace's own ledger and cannot be redefined")
        # fullmatch: re.match lets "$" stop before a trailing newline, which Target refuses
        if not re.fullmatch(NAME_PATTERN, name):
            raise TargetError(f"target name {shorten(name, 80)!r} must match {NAME_PATTERN}")
        added = self._added()
        if name in added and not replace:
            raise TargetError(
                f"target {name!r} exists (ledger {added[name].display_ledger}); "
                "pass --replace to point it elsewhere"
            )
        target = Target(name=name, ledger=ledger if "://" in ledger else ledger_url(ledger))
        if check is not None:
            check(target)
        added[name] = target
        self._write(added)
        return target

    def remove(self, name: str) -> Target:
        added = self._added()
        if name not in added:
            self.get(name)  # says which targets exist
            raise TargetError(f"{LOCAL!r} is the workspace's own ledger and cannot be removed")
        target = added.pop(name)
        self._write(added)
        return target

    def _added(self) -> dict[str, Target]:
        if not self.path.exists():
            return {}
        try:
            stored = json.loads(self.path.read_text())
            return {name: Target(name=name, ledger=url) for name, url in stored.items()}
        except (ValueError, AttributeError) as broken:
            raise TargetError(f"{self.path} is not a targets file: {broken}") from None

    def _write(self, targets: dict[str, Target]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = json.dumps({n: t.ledger for n, t in sorted(targets.items())}, indent=2)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(document + "\n")
        self.path.chmod(0o600)


def resolve_ledger(
    ledger: str | os.PathLike[str] | None = None,
    target: str | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> str:
    """The ledger URL a command or client uses (see the module docstring for the order)."""
    if ledger is not None and target is not None:
        raise TargetError("give either a ledger or a target, not both")
    root = find_workspace(workspace)
    if ledger is not None:
        return ledger_url(os.fspath(ledger), root)
    if target is None and os.environ.get(LEDGER_ENV):
        return ledger_url(None, root)
    chosen = target or os.environ.get(TARGET_ENV)
    if chosen:
        return Targets(root).get(chosen).url()
    return ledger_url(None, root, use_env=False)


def redacted(url: str) -> str:
    """``url`` with any password hidden (also a ``${NAME}`` one)."""
    if "://" not in url:
        return url
    return display_url(url)
