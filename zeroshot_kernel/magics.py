"""The ``%zeroshot`` line magic and the ``%%zeroshot_graph`` cell magic.

Arguments are parsed by Typer apps that reuse the CLI's commands and option types, so a
magic takes the same options and prints the same errors as ``zeroshot`` in a terminal
(``%zeroshot runs`` is ``zeroshot list``; ``%zeroshot stop RUN`` is ``zeroshot stop``).
Commands that show a run display a widget instead of streaming lines.

Example (in a notebook)::

    %load_ext zeroshot_kernel
    %zeroshot research research_templates/rosenbrock --iterations 3
    %zeroshot runs
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from zeroshot_kernel.cli import run_commands, template_commands
from zeroshot_kernel.cli.options import LedgerOption, open_client
from zeroshot_kernel.cli.output import (
    EXIT_REJECTED,
    fail_usage,
    print_diagnostics,
)
from zeroshot_kernel.cli.run_commands import RunArgument

LINE_PROG = "%zeroshot"
CELL_PROG = "%%zeroshot_graph"


@dataclass
class Invocation:
    """What a command needs from the magic that ran it (Typer passes it as ``ctx.obj``)."""

    magics: ZeroshotMagics
    cell: str = ""


def _app(help_text: str) -> typer.Typer:
    return typer.Typer(help=help_text, no_args_is_help=True, add_completion=False,
                       rich_markup_mode=None, pretty_exceptions_enable=False)


line_app = _app("Launch, list, monitor and stop zeroshot runs from a notebook.")
line_app.command("templates")(template_commands.list_templates)
line_app.command("runs")(run_commands.list_runs)
line_app.command("status")(run_commands.status)
line_app.command("stop")(run_commands.stop)


@line_app.command("research")
def research(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Research task folder (relative to the workspace).")],
    iterations: Annotated[
        int | None, typer.Option(min=1, max=100, help="auto-research rounds (default 10).")
    ] = None,
    harness: Annotated[str, typer.Option(help="local, python, claude, codex or openai.")] = "local",
    provider: Annotated[str | None, typer.Option(help="Provider for a model harness.")] = None,
    model: Annotated[str | None, typer.Option(help="Model for a model harness.")] = None,
    ledger: LedgerOption = None,
) -> None:
    """Launch an auto-research run on a task folder and show its monitor.

    Example: %zeroshot research research_templates/rosenbrock --iterations 3
    """
    from zeroshot_kernel.client import AdmissionRejected
    from zeroshot_kernel.research.task import TaskError, resolve_task
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    client = open_client(ledger)
    try:
        resolve_task(task, client.workspace)
    except TaskError as problem:
        fail_usage(str(problem))
    expansion = expand_template("auto-research", TemplateOptions(
        task=task, iterations=iterations, harness=harness, provider=provider, model=model))
    try:
        run = client.submit(expansion.graph, input=expansion.input, runtime=expansion.runtime,
                            title=f"auto-research {task}")
    except AdmissionRejected as rejected:
        print_diagnostics(rejected.diagnostics)
        raise typer.Exit(EXIT_REJECTED) from None
    typer.echo(f"started {run.id}; stop it with: %zeroshot stop {run.id}")
    _show_monitor(ctx, client, run.id)


@line_app.command("monitor")
def monitor(ctx: typer.Context, run_id: RunArgument, ledger: LedgerOption = None) -> None:
    """Show a live monitor of a run (any run in the ledger, finished or not)."""
    client = open_client(ledger)
    handle = run_commands._run_handle(client, run_id)
    _show_monitor(ctx, client, handle.id)


@line_app.command("browse")
def browse(ctx: typer.Context, ledger: LedgerOption = None) -> None:
    """Show the ledger's runs; selecting one opens its monitor."""
    from zeroshot_widgets.browser import RunBrowser

    browser = RunBrowser(open_client(ledger))
    _invocation(ctx).magics.shown.append(browser)
    _display(browser)


graph_app = _app("Validate the graph in this cell (JSON or YAML): diagnostics or identity.")


@graph_app.command()
def graph_cell(
    ctx: typer.Context,
    input: Annotated[
        str | None, typer.Option("--input", help="Initial input to check: JSON or @file.")
    ] = None,
    runtime: Annotated[
        str | None, typer.Option("--runtime", help="Runtime plan to check: JSON or @file.")
    ] = None,
    registry: Annotated[
        Path | None,
        typer.Option("--registry", help="Check workers against this registry file."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON envelope instead of text.")
    ] = False,
) -> None:
    """Every admission check on the cell's graph, as ``zeroshot validate`` does.

    Example: %%zeroshot_graph --input '{"task": "x"}'
    """
    from zeroshot_kernel.cli.validate_command import report_validation
    from zeroshot_kernel.contract.parse import DocumentError, loads_document

    try:
        document = loads_document(_invocation(ctx).cell)
    except DocumentError as error:
        fail_usage(str(error))
    report_validation(document, "graph", input=input, runtime=runtime, registry=registry,
                      as_json=as_json)


@magics_class
class ZeroshotMagics(Magics):
    """``%zeroshot`` and ``%%zeroshot_graph``; remembers the widgets it showed so that
    unloading the extension stops their pollers."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.shown: list[Any] = []

    @line_magic
    def zeroshot(self, line: str) -> None:
        """%zeroshot COMMAND [ARGS]: templates, research, runs, status, monitor, browse,
        stop. ``%zeroshot COMMAND --help`` describes each."""
        _invoke(line_app, LINE_PROG, line, Invocation(self))

    @cell_magic
    def zeroshot_graph(self, line: str, cell: str) -> None:
        """%%zeroshot_graph [--input JSON] [--runtime JSON] [--registry FILE] [--json]:
        validate the graph written in the cell (JSON or YAML)."""
        _invoke(graph_app, CELL_PROG, line, Invocation(self, cell))

    def close(self) -> None:
        """Stop the pollers of every monitor and browser these magics showed."""
        for widget in self.shown:
            widget.close()
        self.shown.clear()


def _show_monitor(ctx: typer.Context, client: Any, run_id: str) -> None:
    from zeroshot_widgets.monitor import RunMonitor

    widget = RunMonitor(client, run_id)
    _invocation(ctx).magics.shown.append(widget)
    _display(widget)


def _display(widget: Any) -> None:
    from IPython.display import display

    display(widget)  # type: ignore[no-untyped-call]


def _invocation(ctx: typer.Context) -> Invocation:
    invocation = ctx.find_object(Invocation)
    if invocation is None:  # pragma: no cover - every magic passes one
        raise RuntimeError("a magic command ran outside a magic")
    return invocation


def _invoke(app: typer.Typer, prog: str, line: str, invocation: Invocation) -> None:
    """Run a command as the CLI would (its usage errors print the CLI's texts); its exit
    status ends the command, never the kernel."""
    try:
        args = shlex.split(line)
    except ValueError as problem:
        typer.echo(f"error: {problem}", err=True)
        return
    with contextlib.suppress(SystemExit):
        typer.main.get_command(app).main(args, prog_name=prog, standalone_mode=True,
                                         obj=invocation)
