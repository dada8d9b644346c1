"""Where the CLI writes the traceback of an unexpected error: a folder of the user's own in
the temporary directory, ``zeroshot-crash-reports-<uid>``.

The temporary directory is shared, so the folder is created 0700 and then checked through
its open descriptor (owned by this user, no access for others, not a link) before a report
is created in it (a new file, 0600, never through a link). Someone else who made that
name first (their folder, a 0777 one, a link into a victim's ``~/.ssh``) gets nothing
written through it, and cannot turn reports off either: the report then goes to a new
folder with a random name (``mkdtemp``, which nobody can choose in advance).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import stat
import sys
import tempfile
import traceback
from pathlib import Path

from zeroshot_kernel.safe_files import write_new_at

PREFIX = "zeroshot-crash-reports"


def crash_folder() -> Path:
    """This user's report folder in the temporary directory (whoever made it first)."""
    return Path(tempfile.gettempdir()) / f"{PREFIX}-{os.getuid()}"


def write_report() -> Path | None:
    """The traceback of the exception being handled, in a file only this user can read;
    ``None`` when no folder could take it."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"zeroshot-{stamp}-{os.getpid()}.txt"
    text = f"zeroshot {' '.join(sys.argv[1:2])}\n\n{traceback.format_exc()}"
    data = text.encode("utf-8", "backslashreplace")
    try:
        folder = crash_folder()
        handle = _open_own(folder)
        if handle is None:
            folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-{os.getuid()}-"))
            handle = _open_own(folder)
        if handle is None:
            return None
        try:
            write_new_at(handle, name, data, mode=0o600)
        finally:
            os.close(handle)
    except OSError:
        return None
    return folder / name


def _open_own(folder: Path) -> int | None:
    """A descriptor of ``folder``, made 0700 when it does not exist, when it is a folder of
    this user's that nobody else may enter; ``None`` when it is anything else (the checks
    are made on the open descriptor, so the folder checked is the folder written)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None  # a link, a file, or not ours to open
    found = os.fstat(handle)
    if found.st_uid != os.getuid() or stat.S_IMODE(found.st_mode) & 0o077:
        os.close(handle)
        return None
    return handle
