"""Options shared by every command that reads or writes runs."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client

LedgerOption = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        help="Ledger: a SQLAlchemy URL or a SQLite file path; ZEROSHOT_LEDGER when not given "
        "(default: .zeroshot/ledger.db in the workspace).",
        show_default=False,
    ),
]
TargetOption = Annotated[
    str | None,
    typer.Option(
        "--target",
        help="A named ledger (see `zeroshot target list`); ZEROSHOT_TARGET when not given.",
        show_default=False,
    ),
]


def chosen_ledger(ledger: str | None, target: str | None) -> str:
    """The ledger URL for ``--ledger``/``--target`` (and their environment variables)."""
    from zeroshot_kernel.console.output import fail_usage
    from zeroshot_kernel.targets import TargetError, resolve_ledger
    from zeroshot_kernel.workspace import LedgerPathError

    try:
        return resolve_ledger(ledger, target)
    except (TargetError, LedgerPathError) as problem:
        fail_usage(str(problem))


def open_client(ledger: str | None, target: str | None = None) -> Client:
    """The ledger client, imported on use so that ``--help`` and ``validate`` stay quick."""
    from zeroshot_kernel.client import Client
    from zeroshot_kernel.console.output import fail_usage

    url = chosen_ledger(ledger, target)
    try:
        return Client(url)
    except Exception as problem:
        fail_usage(ledger_problem(url, problem))


def ledger_problem(url: str, problem: Exception) -> str:
    """One line on why the ledger at ``url`` could not be opened: the ledger's own
    :class:`LedgerError` as it is, a bad URL or a missing driver in words; anything else
    is not the ledger's problem and is raised again."""
    from sqlalchemy.exc import SQLAlchemyError

    from zeroshot_kernel.ledger import LedgerError

    if isinstance(problem, LedgerError):
        return str(problem)
    if isinstance(problem, SQLAlchemyError | ImportError):
        return unreachable(url, problem)
    raise problem


def unreachable(url: str, problem: Exception) -> str:
    """Why a ledger could not be opened, in one line and without its password."""
    from sqlalchemy.engine import make_url

    from zeroshot_kernel.targets import redacted

    reason = str(getattr(problem, "orig", None) or problem).strip().splitlines()[0]
    password = make_url(url).password if "://" in url else None
    if password:
        reason = reason.replace(str(password), "***")
    return f"cannot open ledger {redacted(url)}: {reason}"


SANDBOX_ENV = "ZEROSHOT_SANDBOX"


class SandboxChoice(enum.StrEnum):
    """``--sandbox`` values (see :data:`zeroshot_kernel.sandbox.SandboxMode`)."""

    bwrap = "bwrap"
    none = "none"


SandboxOption = Annotated[
    SandboxChoice | None,
    typer.Option(
        "--sandbox",
        envvar=SANDBOX_ENV,
        show_default=False,
        help="How model-written code (agent CLIs and their tools, checks, experiments) is "
        "contained: bwrap (default: a bubblewrap box; refused where none can be made) or "
        f"none (it runs with your full powers, shown as UNCONTAINED). Default: ${SANDBOX_ENV}.",
    ),
]


# Template options, shared by `zeroshot template show` and `zeroshot profile save` (the options
# of auto-research alone are declared in zeroshot_kernel.auto_research.options).
TaskOption = Annotated[str, typer.Option(help="Template: task text or research task folder.")]
HarnessOption = Annotated[str, typer.Option(help="local, python, claude, codex or openai.")]
