"""Options shared by every command that reads or writes runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
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
    """The ledger client, imported on use so that ``--help`` and ``validate`` stay quick."""
    from zeroshot_kernel.client import Client

    return Client(ledger)
