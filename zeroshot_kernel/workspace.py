"""Where a run's files and the default ledger live.

The workspace is the nearest directory (from the current one upwards) holding a
``.zeroshot`` folder, else the nearest git work tree, else the current directory. The
ledger is ``--ledger``/``ledger=``, else ``ZEROSHOT_LEDGER``, else the workspace's
``.zeroshot/ledger.db``.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import URL

LEDGER_ENV = "ZEROSHOT_LEDGER"


def find_workspace(start: str | os.PathLike[str] | None = None) -> Path:
    here = Path(start or Path.cwd()).resolve()
    for marker in (".zeroshot", ".git"):
        for directory in (here, *here.parents):
            if (directory / marker).exists():
                return directory
    return here


def ledger_url(
    explicit: str | None = None, workspace: Path | None = None, *, use_env: bool = True
) -> str:
    """The ledger URL to use; a plain path is taken as a SQLite file."""
    value = explicit or (os.environ.get(LEDGER_ENV) if use_env else None)
    if value is None:
        root = workspace or find_workspace()
        path = root / ".zeroshot" / "ledger.db"  # its folder is made by the first write
        return URL.create("sqlite", database=str(path)).render_as_string()
    if "://" not in value:
        path = Path(value).expanduser().resolve()
        return URL.create("sqlite", database=str(path)).render_as_string()
    return value


def display_url(url: str) -> str:
    """The URL with any password hidden, for printing."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
