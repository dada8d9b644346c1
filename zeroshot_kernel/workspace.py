"""Where a run's files and the default ledger live.

The workspace is the nearest directory (from the current one upwards) holding a
``.zeroshot`` folder or a ``.git``, else the current directory (see :func:`find_workspace`). The
ledger is ``--ledger``/``ledger=``, else ``ZEROSHOT_LEDGER``, else the workspace's
``.zeroshot/ledger.db``.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import URL

from zeroshot_kernel.exceptions import InvalidInput

LEDGER_ENV = "ZEROSHOT_LEDGER"
WORKSPACE_DIR = ".zeroshot"
"""The workspace's own folder: its ledger, records and change worktrees."""
MAX_SHOWN_CHARS = 200


class LedgerPathError(InvalidInput):
    """A ledger location that is not text: a path or URL holding bytes that are not UTF-8
    (an environment variable or a folder name can), which no database URL can carry."""


def find_workspace(start: str | os.PathLike[str] | None = None) -> Path:
    """The workspace of ``start`` (default: the current directory): the nearest directory
    holding ``.zeroshot/`` or ``.git``, as git finds its repository, so a repository
    inside a folder that once held a workspace is a workspace of its own (its change
    worktrees, its ledger and its git agree); with neither, ``start`` itself."""
    here = Path(start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / WORKSPACE_DIR).is_dir() or (directory / ".git").exists():
            return directory
    return here


def ledger_url(
    explicit: str | None = None, workspace: Path | None = None, *, use_env: bool = True
) -> str:
    """The ledger URL to use; a plain path is taken as a SQLite file. Raises
    :class:`LedgerPathError` for a location that is not UTF-8 text."""
    from_env = os.environ.get(LEDGER_ENV) if use_env and not explicit else None
    value = explicit or from_env
    if value is None:
        root = workspace or find_workspace()
        path = root / ".zeroshot" / "ledger.db"  # its folder is made by the first write
        return _sqlite_url(_text(str(path), "the workspace's ledger"))
    _text(value, LEDGER_ENV if from_env else "the ledger")
    if "://" not in value:
        return _sqlite_url(str(Path(value).expanduser().resolve()))
    return value


def _sqlite_url(path: str) -> str:
    return URL.create("sqlite", database=path).render_as_string()


def _text(value: str, what: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "backslashreplace").decode("utf-8")[:MAX_SHOWN_CHARS]
        raise LedgerPathError(
            f"{what} {shown} is not valid UTF-8 text; name a ledger with --ledger"
        ) from None
    return value


def display_url(url: str) -> str:
    """The URL with any password hidden, for printing."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
