"""``zeroshot batch NOTEBOOK | status | resume | list``: parameterised notebooks, headless."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from zeroshot_kernel.console.options import LedgerOption, TargetOption, chosen_ledger
from zeroshot_kernel.console.output import fail_usage, print_json

if TYPE_CHECKING:
    from zeroshot_kernel.batch import BatchStatus
    from zeroshot_kernel.batch.storage import ItemStatus

ITEM_STATUSES: tuple[ItemStatus, ...] = ("succeeded", "failed", "running", "pending")
"""An item's statuses, in the order counts are shown."""

EXIT_ITEMS_FAILED = 1


PARAMETER_FLAGS = ("-p", "--parameter")


class _RunByDefault(TyperGroup):
    """``zeroshot batch NOTEBOOK ...`` means ``zeroshot batch run NOTEBOOK ...``, and
    ``-p NAME VALUE`` (papermill's form) reaches ``run`` as ``-p NAME=VALUE``."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        name, command, rest = super().resolve_command(ctx, args)
        if name != "run" or command is None:
            return name, command, rest
        options = {
            option
            for param in command.get_params(ctx)
            for option in (*param.opts, *param.secondary_opts)
            if option.startswith("-")
        }
        return name, command, _joined_pairs(rest, options)


def _joined_pairs(args: list[str], options: set[str]) -> list[str]:
    """``-p NAME VALUE`` joined into ``-p NAME=VALUE``, unless VALUE is one of ``options``
    (``-p task -q``: the value is missing, and ``run`` says so, instead of running with
    ``task = "-q"``). Any other value may start with ``-``: ``-p x -1``."""
    joined: list[str] = []
    position = 0
    while position < len(args):
        arg = args[position]
        pair = args[position + 1 : position + 3]
        if (
            arg in PARAMETER_FLAGS
            and len(pair) == 2
            and "=" not in pair[0]
            and pair[1].split("=", 1)[0] not in options  # --workers=1 is an option too
        ):
            joined += [arg, f"{pair[0]}={pair[1]}"]
            position += 3
        else:
            joined.append(arg)
            position += 1
    return joined


batch_app = typer.Typer(
    cls=_RunByDefault,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Execute a notebook once per parameter set, headless, every item in the ledger.\n\n"
    "\b\nExamples:\n"
    "  zeroshot batch research_templates/research.ipynb -p task branin -p iterations 3\n"
    "  zeroshot batch research.ipynb --grid grid.yaml --workers 2 --output-dir out\n"
    "  zeroshot batch research.ipynb --csv runs.csv --dask tcp://scheduler:8786\n"
    "  zeroshot batch status batch-abcdefghijkl\n"
    "  zeroshot batch resume batch-abcdefghijkl",
)

WorkersOption = Annotated[int, typer.Option(min=1, max=64, help="Notebooks at once (local).")]
DaskOption = Annotated[
    str | None,
    typer.Option(help="Run on this dask.distributed scheduler instead, e.g. tcp://host:8786."),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the batch as JSON.")]


@batch_app.command("run")
def run(
    notebook: Annotated[Path, typer.Argument(help="The notebook (with a parameters cell).")],
    parameter: Annotated[
        list[str] | None,
        typer.Option(
            "-p",
            "--parameter",
            metavar="NAME VALUE",
            help="A parameter for every notebook (NAME VALUE or NAME=VALUE); repeatable.",
        ),
    ] = None,
    grid: Annotated[
        Path | None, typer.Option(help="YAML/JSON mapping of names to lists: the cross product.")
    ] = None,
    csv: Annotated[
        Path | None, typer.Option(help="One notebook per CSV row (header: names).")
    ] = None,
    output_dir: Annotated[
        Path,
        typer.Option(
            help="Where executed notebooks go (inside the workspace), each batch in a folder "
            "of its own named after its id."
        ),
    ] = Path("batch-output"),
    allow_outside_workspace: Annotated[
        bool,
        typer.Option(
            "--allow-outside-workspace", help="Let --output-dir point outside the workspace."
        ),
    ] = False,
    workers: WorkersOption = 2,
    dask: DaskOption = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=1, help="Seconds one notebook may run (and so any of its cells) before it fails."
        ),
    ] = None,
    kernel: Annotated[
        str | None, typer.Option(help="Kernel name (default: the notebook's).")
    ] = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Execute NOTEBOOK once per parameter set; exit 1 when any item failed.

    Parameter names must be plain Python variable names (they become code in the
    parameters cell) that the notebook's parameters cell assigns, when it has one; values
    are passed as literals (an empty value is the empty string). Anything else is refused
    before any notebook runs."""
    from zeroshot_kernel.batch import (
        ParameterError,
        SchedulerUnusable,
        create_batch,
        parameter_sets,
        resume_batch,
    )
    from zeroshot_kernel.dask_scheduler import check_address
    from zeroshot_kernel.exceptions import InvalidInput

    pairs = [tuple(text.split("=", 1)) for text in parameter or []]
    if any(len(pair) != 2 for pair in pairs):
        fail_usage("-p takes a name and a value: -p iterations 3")
    try:
        sets = parameter_sets(pairs, grid=grid, rows=csv)  # type: ignore[arg-type]
    except ParameterError as problem:
        fail_usage(str(problem))
    ledger_chosen = chosen_ledger(ledger, target)
    try:  # the notebook, the parameters, the output folder and the scheduler's address
        if dask is not None:
            check_address(dask)
        created = create_batch(
            notebook,
            sets,
            output_dir=output_dir,
            timeout_s=timeout,
            kernel_name=kernel,
            ledger=ledger_chosen,
            allow_outside_workspace=allow_outside_workspace,
        )
    except InvalidInput as problem:
        fail_usage(str(problem))
    if not as_json:
        typer.echo(f"executed notebooks go to {created.output_dir}", err=True)
    try:
        status = resume_batch(  # a new batch: every item is still to run
            created.batch_id,
            workers=workers,
            dask=dask,
            ledger=ledger_chosen,
            progress=not quiet and not as_json,
        )
    except SchedulerUnusable as problem:
        fail_usage(
            f"{problem}; batch {created.batch_id} is recorded: run it with "
            f"zeroshot batch resume {created.batch_id}"
        )
    _report(status, as_json)


@batch_app.command("resume")
def resume(
    batch_id: Annotated[str, typer.Argument(help="Batch id, e.g. batch-abcdefghijkl.")],
    workers: WorkersOption = 2,
    dask: DaskOption = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Execute again only the items of a batch that did not succeed."""
    from zeroshot_kernel.batch import (
        BatchNotFound,
        OutputUnusable,
        ParameterError,
        SchedulerUnusable,
        resume_batch,
    )

    try:
        status = resume_batch(
            batch_id,
            workers=workers,
            dask=dask,
            ledger=chosen_ledger(ledger, target),
            progress=not quiet and not as_json,
        )
    except (BatchNotFound, ParameterError, OutputUnusable, SchedulerUnusable) as problem:
        fail_usage(str(problem))
    _report(status, as_json)


@batch_app.command("status")
def status(
    batch_id: Annotated[str, typer.Argument(help="Batch id, e.g. batch-abcdefghijkl.")],
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Show every item of a batch: parameters, status, duration, output, error."""
    from zeroshot_kernel.batch import BatchNotFound, batch_status

    try:
        found = batch_status(batch_id, ledger=chosen_ledger(ledger, target))
    except BatchNotFound as problem:
        fail_usage(str(problem))
    _report(found, as_json, exit_on_failure=False)


@batch_app.command("list")
def list_batches(
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON list: each batch's id, notebook, time and counts."
        ),
    ] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """List the ledger's batches, newest first (`zeroshot batch status ID` shows one)."""
    from zeroshot_kernel.batch import open_store

    with open_store(chosen_ledger(ledger, target)) as store:
        found = store.batches()
    if as_json:
        print_json([_summary(batch) for batch in found])
        return
    for batch in found:
        typer.echo(f"{batch.batch_id}  {_counts(batch)}  {batch.notebook}")


def _summary(found: BatchStatus) -> dict[str, Any]:
    return {
        "batchId": found.batch_id,
        "notebook": found.notebook,
        "createdAt": found.created_at,
        "items": len(found.items),
        "counts": {status: found.count(status) for status in ITEM_STATUSES},
    }


def _report(found: BatchStatus, as_json: bool, *, exit_on_failure: bool = True) -> None:
    from zeroshot_kernel.contract.reading import shorten

    if as_json:
        print_json(found.to_wire())
    else:
        typer.echo(f"{found.batch_id}: {_counts(found)}; notebook {found.notebook}")
        for item in found.items:
            duration = f"{item.duration_s:6.1f} s" if item.duration_s is not None else "      -"
            typer.echo(  # values are cut (a parameter can be megabytes; --json has all)
                f"  {item.index:3d}  {item.status:<9} {duration}  "
                f"{shorten(json.dumps(item.parameters, sort_keys=True))}"
            )
            if item.results:
                typer.echo(f"       recorded {shorten(json.dumps(item.results, sort_keys=True))}")
            if item.error:
                typer.echo(f"       error: {item.error}")
            if item.output:
                typer.echo(f"       output {item.output}")
    if exit_on_failure and found.count("failed"):
        raise typer.Exit(EXIT_ITEMS_FAILED)


def _counts(found: BatchStatus) -> str:
    parts = [f"{found.count(s)} {s}" for s in ITEM_STATUSES if found.count(s)]
    return ", ".join(parts) + f" of {len(found.items)}"
