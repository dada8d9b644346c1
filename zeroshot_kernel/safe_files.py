"""Files that other hands may have placed: read and written without following a link.

Recorded files (a study's records, a candidate's source) and output paths (an export, a
report) may hold a symbolic link to a secret, a FIFO that never ends or ``/dev/zero``.
Everything below a trusted folder is opened here one part at a time with ``O_NOFOLLOW``
from the folder's descriptor (an ``openat`` walk), only regular files are read, and never
more than a limit; outputs are written to a temporary file renamed into place, which
replaces a link instead of writing through it. Each refusal is a :class:`FileRefused`.

Example::

    from zeroshot_kernel.safe_files import opened_below, read_open, write_atomic
    with opened_below(workspace, ".zeroshot/research/s/study.json") as handle:
        data = read_open(handle, limit=1 << 20, shown="study.json")
    write_atomic("rounds.csv", b"round,metric\\r\\n")
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from zeroshot_kernel.exceptions import InvalidInput

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""Non-blocking: opening a FIFO returns at once (and is then refused) instead of waiting."""
MAX_PATH_CHARS = 4096


class FileRefused(InvalidInput):
    """A path that is not what it must be (a symbolic link, not a regular file or folder,
    too large, a name that leaves its folder); nothing was read or written through it."""


def relative_parts(path: str) -> tuple[str, ...]:
    """The parts of a relative POSIX path that other hands recorded: refused when it is
    absolute or empty, or holds ``.``, ``..``, an empty part, a backslash or a NUL."""
    parts = tuple(path.split("/"))
    if (
        not path
        or len(path) > MAX_PATH_CHARS
        or "\\" in path
        or "\0" in path
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise FileRefused(f"{path[:200]!r} is not a relative path inside its folder")
    return parts


def _parts(relative: str | PurePosixPath | tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(relative, tuple):
        return relative
    text = str(relative)
    return () if text in ("", ".") else relative_parts(text)


def _refusal(name: str, folder: int, shown: str, wanted: str) -> FileRefused:
    """Why ``name`` in ``folder`` could not be opened as ``wanted``, in words."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    what = "a symbolic link" if stat.S_ISLNK(mode) else f"not {wanted}"
    return FileRefused(f"{shown} is {what}")


def open_folder_at(folder: int, name: str, shown: str) -> int:
    """The descriptor of the folder ``name`` in ``folder``, never through a link."""
    try:
        return os.open(name, _FOLDER, dir_fd=folder)
    except OSError as problem:
        if problem.errno in (errno.ENOTDIR, errno.ELOOP):
            raise _refusal(name, folder, shown, "a folder") from None
        raise


@contextlib.contextmanager
def opened_below(
    root: str | os.PathLike[str] | int,
    relative: str | PurePosixPath | tuple[str, ...] = "",
    *,
    folder: bool = False,
) -> Iterator[int]:
    """A descriptor of ``root/relative``: ``root`` as given (the caller's own path, or an
    open folder's descriptor), every part below it opened without following a link; the
    last part must be a folder (``folder``) or a regular file. Missing parts raise
    ``FileNotFoundError``."""
    parts = _parts(relative)
    if isinstance(root, int):
        current, walked = os.dup(root), PurePosixPath()
    else:
        current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        walked = PurePosixPath(os.fspath(root))
    try:
        for position, part in enumerate(parts):
            walked /= part
            last = position == len(parts) - 1
            if last and not folder:
                following = _open_file_at(current, part, str(walked))
            else:
                following = open_folder_at(current, part, str(walked))
            os.close(current)
            current = following
        yield current
    finally:
        os.close(current)


def _open_file_at(folder: int, name: str, shown: str) -> int:
    try:
        handle = os.open(name, _FILE, dir_fd=folder)
    except OSError as problem:
        if problem.errno == errno.ELOOP:
            raise FileRefused(f"{shown} is a symbolic link") from None
        raise
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise FileRefused(f"{shown} is not a regular file")
    return handle


def read_open(handle: int, *, limit: int, shown: str) -> bytes:
    """At most ``limit`` bytes of an open regular file; a larger one is refused (one
    byte past the limit is read, so a file that grows meanwhile is still bounded)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(handle, min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise FileRefused(f"{shown} is larger than the {limit:,}-byte limit")
    return b"".join(chunks)


def list_tree(folder: int, *, limit: int) -> tuple[list[str], list[str]]:
    """The regular files below ``folder`` (relative POSIX paths) and everything else that
    is not a folder (links, FIFOs, devices), walked without following a link; refused past
    ``limit`` entries."""
    files: list[str] = []
    others: list[str] = []
    pending: list[tuple[int, str]] = [(os.dup(folder), "")]
    try:
        while pending:
            handle, prefix = pending.pop()
            try:
                with os.scandir(handle) as entries:
                    for entry in entries:
                        if len(files) + len(others) + len(pending) >= limit:
                            raise FileRefused(f"more than {limit:,} entries in one folder tree")
                        path = prefix + entry.name
                        if entry.is_dir(follow_symlinks=False):
                            below = open_folder_at(handle, entry.name, path)
                            pending.append((below, path + "/"))
                        elif entry.is_file(follow_symlinks=False):
                            files.append(path)
                        else:
                            others.append(path)
            finally:
                os.close(handle)
    finally:
        for handle, _ in pending:
            os.close(handle)
    return sorted(files), sorted(others)


def write_new_at(folder: int, name: str, data: bytes, *, mode: int = 0o644) -> None:
    """Create the file ``name`` in ``folder`` holding ``data``; an existing entry (a link
    included) is an error, never opened."""
    handle = os.open(
        name,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        mode,
        dir_fd=folder,
    )
    with os.fdopen(handle, "wb") as out:
        out.write(data)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` (its folder must exist) through a temporary file beside
    it, renamed into place: a reader sees the old file or the new one whole. ``path``
    must be absent or a regular file: a link (dangling or not), a folder or a FIFO there is
    refused, and even one planted meanwhile is replaced by the rename, never written
    through."""
    target = Path(path)
    try:
        mode_now = os.lstat(target).st_mode
    except FileNotFoundError:
        mode_now = stat.S_IFREG
    if not stat.S_ISREG(mode_now):
        what = "a symbolic link" if stat.S_ISLNK(mode_now) else "not a regular file"
        raise FileRefused(f"{target} is {what}; nothing was written")
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
