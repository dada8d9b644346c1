"""``zeroshot target add | list | remove``: named ledgers to admit and record runs in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from zeroshot_kernel.console.output import fail_usage, print_json

target_app = typer.Typer(
    help="Named ledgers (the workspace's SQLite file, a shared PostgreSQL) for --target.\n\n"
    "\b\nExamples:\n"
    "  zeroshot target add shared --ledger 'postgresql://me:${PGPASSWORD}@db/zeroshot'\n"
    "  zeroshot list --target shared\n"
    "  ZEROSHOT_TARGET=shared zeroshot profile list",
    no_args_is_help=True,
)
if TYPE_CHECKING:
    from zeroshot_kernel.targets import Target

NameArgument = Annotated[str, typer.Argument(help="Target name, e.g. shared.")]


@target_app.command("add")
def add(
    name: NameArgument,
    ledger: Annotated[
        str,
        typer.Option(
            "--ledger",
            help="A SQLAlchemy URL or SQLite file path; ${NAME} in it is read from "
            "the environment each time the target is used.",
            show_default=False,
        ),
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Point an existing name elsewhere.")
    ] = False,
    check: Annotated[
        bool, typer.Option(help="Connect once and set up the ledger's tables before saving.")
    ] = True,
) -> None:
    """Name a ledger so that commands can use it with --target NAME.

    The URL is kept in .zeroshot/targets.json (readable by you alone) and never printed
    with its password.
    """
    from zeroshot_kernel.targets import TargetError, Targets

    try:
        added = Targets().add(name, ledger, replace=replace, check=_open if check else None)
    except TargetError as problem:
        fail_usage(str(problem))
    typer.echo(f"target {added.name}: {added.display_ledger}")


def _open(target: Target) -> None:
    """Create the ledger's tables now, as its first write would, so that a typo, an
    unreachable server or a path that cannot hold a file is refused before it is saved
    (opening a ``Ledger`` alone does not even open a SQLite file that is missing)."""
    from zeroshot_kernel.console.options import ledger_problem
    from zeroshot_kernel.ledger import Ledger
    from zeroshot_kernel.targets import TargetError

    url = target.url()
    try:
        with Ledger(url) as ledger:
            ledger.prepare()
    except Exception as problem:
        raise TargetError(
            f"{ledger_problem(url, problem)}; pass --no-check to save it anyway"
        ) from None


@target_app.command("list")
def list_targets(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the targets; the one in use (ZEROSHOT_TARGET, else local) is starred."""
    import os

    from zeroshot_kernel.targets import LOCAL, TARGET_ENV, TargetError, Targets

    try:
        targets = Targets().list()
    except TargetError as problem:
        fail_usage(str(problem))
    current = os.environ.get(TARGET_ENV) or LOCAL
    if as_json:
        print_json(
            [
                {"name": t.name, "ledger": t.display_ledger, "current": t.name == current}
                for t in targets
            ]
        )
        return
    for target in targets:
        mark = "*" if target.name == current else " "
        typer.echo(f"{mark} {target.name:<16} {target.display_ledger}")


@target_app.command("remove")
def remove(name: NameArgument) -> None:
    """Forget a target (its ledger and the runs in it are left as they are)."""
    from zeroshot_kernel.targets import TargetError, Targets

    try:
        removed = Targets().remove(name)
    except TargetError as problem:
        fail_usage(str(problem))
    typer.echo(f"removed target {removed.name} ({removed.display_ledger}); its ledger is untouched")
