"""The workspace's lock files, in ``.zeroshot/locks``: never opened through a link.

Lock files are created on first use, so a symbolic link planted at a lock's name (or at
the locks folder) would have the workbench create a file wherever the link points,
outside the workspace; a FIFO there would hang whoever opens it. Here the folder is
opened with ``O_NOFOLLOW`` and every file in it relative to the folder's descriptor,
also with ``O_NOFOLLOW``; what is not a plain folder or file is refused in words, with
what to remove (a file where the folder belongs is one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from zeroshot_kernel.exceptions import Refused

LOCKS_DIR = Path(".zeroshot") / "locks"
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LOCK = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class LockUnusable(Refused):
    """The locks folder, or a lock file in it, is not what the workbench made there."""


def locks_folder(workspace: str | os.PathLike[str]) -> Path:
    """Where ``workspace`` keeps its lock files."""
    return Path(workspace).resolve() / LOCKS_DIR


def open_lock(path: Path) -> BinaryIO:
    """``path`` (a file in a locks folder) open for ``fcntl.flock``, created 0600 with its
    folder when missing. Raises :class:`LockUnusable` for a link, FIFO or folder there."""
    with _folder(path.parent) as folder:
        try:
            handle = os.open(path.name, _LOCK, 0o600, dir_fd=folder)
        except OSError as problem:
            raise _unusable(path, problem) from None
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise LockUnusable(f"{path} is not a lock file; remove it")
    return os.fdopen(handle, "rb", buffering=0)


def replace_file(path: Path, data: bytes) -> None:
    """Write ``path`` (in a locks folder) whole, through a new temporary file renamed over
    it: readers see the old file or the new one, and a link there is replaced, not
    followed."""
    temporary = f".{path.name}.{os.getpid()}.{threading.get_ident()}"
    with _folder(path.parent) as folder:
        try:
            with contextlib.suppress(FileNotFoundError):  # left by a process of this pid
                os.unlink(temporary, dir_fd=folder)
            handle = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                0o600,
                dir_fd=folder,
            )
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except OSError as problem:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise _unusable(path, problem) from None


@contextlib.contextmanager
def _folder(path: Path) -> Iterator[int]:
    """The locks folder's descriptor (created 0700 when missing), never through a link."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = os.open(path, _FOLDER)
    except (FileExistsError, NotADirectoryError):
        raise LockUnusable(f"{path} is not a folder; remove it (lock files go there)") from None
    except OSError as problem:
        raise _unusable(path, problem) from None
    try:
        yield folder
    finally:
        os.close(folder)


def _unusable(path: Path, problem: OSError) -> LockUnusable:
    if problem.errno == errno.ELOOP:
        return LockUnusable(f"{path} is a symbolic link; remove it (lock files are made there)")
    return LockUnusable(f"cannot use the lock file {path}: {problem.strerror or problem}")
