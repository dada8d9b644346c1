"""Which ledgers a request may read: the server's root dir and the folders inside it,
each opened once, as the CLI would open it from there.

``?workspace=`` names an absolute folder; it must be the root dir, a folder inside it, or
the workspace the CLI finds from the root dir (the folder above it holding ``.zeroshot`` or
``.git``: a server started in ``repo/notebooks`` serves ``repo``'s ledger, as ``zeroshot``
run there would, and a kernel's monitor names that folder). Anything else is refused with
403: a browser tab must not read every ledger the server's user can reach.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from zeroshot_kernel.auto_research.studies.table import RunCache
from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.lab_server.inputs import MAX_WORKSPACE_CHARS, BadInput, shown
from zeroshot_kernel.workspace import find_workspace


class OutsideRoot(PermissionError, Refused):
    """A workspace outside the server's root dir (HTTP 403). (The ``OSError`` base
    first: behind ``RuntimeError`` it would leave ``errno`` and ``filename`` unset.)"""


class Workspaces:
    """The clients of the workspaces requests named, by resolved folder (thread-safe:
    handlers read ledgers in worker threads)."""

    def __init__(self, root_dir: str | os.PathLike[str]) -> None:
        self.root = Path(root_dir).expanduser().resolve()
        self._clients: dict[Path, Client] = {}
        self._caches: dict[Path, RunCache] = {}
        self._lock = threading.Lock()

    def resolve(self, requested: str | None) -> Path:
        """The folder ``?workspace=`` names (default: the root dir), resolved; raises
        :class:`BadInput` or :class:`OutsideRoot`."""
        if requested is None or requested == "":
            return self.root
        if len(requested) > MAX_WORKSPACE_CHARS or "\x00" in requested:
            raise BadInput(f"not a folder: {shown(requested)!r}")
        path = Path(requested)
        if not path.is_absolute():
            raise BadInput(f"workspace must be an absolute path, not {shown(requested)!r}")
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError):
            raise BadInput(f"not a folder: {shown(requested)!r}") from None
        if not self.allowed(resolved):
            raise OutsideRoot(
                f"workspace {shown(requested, 200)!r} is outside the server's root dir"
            )
        if not resolved.is_dir():
            raise BadInput(f"no such folder: {shown(requested, 200)!r}")
        return resolved

    def allowed(self, resolved: Path) -> bool:
        return (
            resolved == self.root
            or self.root in resolved.parents
            or resolved == self._root_workspace()
        )

    def client(self, folder: Path) -> Client:
        """The client of ``folder``'s ledger (made once; making one reads nothing)."""
        with self._lock:
            client = self._clients.get(folder)
            if client is None:
                client = self._clients[folder] = Client(workspace=str(folder))
            return client

    def run_cache(self, folder: Path) -> RunCache:
        """The study table's rows of ``folder``'s finished runs (read once: they never
        change), shared by the requests on that workspace."""
        with self._lock:
            return self._caches.setdefault(folder, RunCache())

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def _root_workspace(self) -> Path:
        return find_workspace(self.root)
