"""Options shared by every command that reads or writes runs."""

from __future__ import annotations

from typing import Annotated

import typer

from zeroshot_kernel.client import Client

LedgerOption = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        envvar="ZEROSHOT_LEDGER",
        help="Ledger: a SQLAlchemy URL or a SQLite file path "
        "(default: .zeroshot/ledger.db in the workspace).",
        show_default=False,
    ),
]


def open_client(ledger: str | None) -> Client:
    return Client(ledger)
