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

import keyword
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from zeroshot_kernel.auto_research.launch import Research, launch_research, research_options
from zeroshot_kernel.cli import run_commands, template_commands
from zeroshot_kernel.cli.run_commands import RunArgument
from zeroshot_kernel.console.options import (
    LedgerOption,
    SandboxOption,
    TargetOption,
    open_client,
)
from zeroshot_kernel.console.output import (
    EXIT_REJECTED,
    fail_usage,
)
from zeroshot_kernel.sandbox import SandboxUnavailable, sandbox_mode

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client

LINE_PROG = "%zeroshot"
CELL_PROG = "%%zeroshot_graph"


@dataclass
class Invocation:
    """What a command needs from the magic that ran it (Typer passes it as ``ctx.obj``)."""

    magics: ZeroshotMagics
    cell: str = ""


def _app(help_text: str) -> typer.Typer:
    return typer.Typer(
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
    )


line_app = _app("Launch, list, monitor and stop zeroshot runs from a notebook.")
line_app.command("templates")(template_commands.list_templates)
line_app.command("runs")(run_commands.list_runs)
line_app.command("status")(run_commands.status)
line_app.command("stop")(run_commands.stop)


@line_app.command("research")
@research_options
def research(
    ctx: typer.Context,
    task: Annotated[
        str,
        typer.Argument(help="Research task folder (holds task.yaml), or a bundled task's name."),
    ],
    *,
    research: Research,
    sandbox: SandboxOption = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Launch an auto-research run on a task folder and show its monitor (the options are
    those of ``zeroshot research run``).

    Example: %zeroshot research research_templates/rosenbrock --iterations 3 --study long

    On a local OpenAI-compatible server: %zeroshot research branin --harness openai
    --base-url http://127.0.0.1:8080/v1 --model local --max-tokens 2048
    """
    run = launch_research(
        task, research, sandbox=sandbox_mode(sandbox), ledger=ledger, target=target
    )  # the monitor below stops it, and continues it as another
    _show_monitor(ctx, run.client, run.id)


LatestRunArgument = Annotated[
    str | None,
    typer.Argument(
        help="Run id (default: the run these magics launched or showed last).", show_default=False
    ),
]


@line_app.command("wait")
def wait(
    ctx: typer.Context,
    run_id: LatestRunArgument = None,
    timeout: Annotated[
        float | None, typer.Option(min=0, help="Give up after this many seconds (the run goes on).")
    ] = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Wait until a run ends, let its monitors catch up, and print its result.

    Useful in a notebook run top to bottom: the cells below see the finished run.
    Example: %zeroshot wait --timeout 600
    """
    from zeroshot_kernel.console.event_lines import describe_result

    magics = _invocation(ctx).magics
    client = magics.client_for(run_id, ledger, target)
    handle = run_commands._run_handle(client, _chosen_run(magics, run_id))
    try:
        result = handle.result(timeout)
    except TimeoutError as problem:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(EXIT_REJECTED) from None
    for widget in magics.shown:
        if getattr(widget, "run_id", None) == handle.id:
            widget.join(timeout=10)
    typer.echo(f"{handle.id} {describe_result(result)}")


@line_app.command("report")
def report(
    ctx: typer.Context,
    run_id: LatestRunArgument = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Show a run's report: plateau chart, incumbent and every round's evidence.

    Example: %zeroshot report run-abcdefghijkl
    """
    from zeroshot_widgets.report import show_report

    magics = _invocation(ctx).magics
    client = magics.client_for(run_id, ledger, target)
    handle = run_commands._run_handle(client, _chosen_run(magics, run_id))
    magics.remember(handle.id, client)
    show_report(client, handle.id)


@line_app.command("monitor")
def monitor(
    ctx: typer.Context,
    run_id: RunArgument,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Show a live monitor of a run (any run in the ledger, finished or not)."""
    client = open_client(ledger, target)
    handle = run_commands._run_handle(client, run_id)
    _show_monitor(ctx, client, handle.id)


@line_app.command("browse")
def browse(ctx: typer.Context, ledger: LedgerOption = None, target: TargetOption = None) -> None:
    """Show the ledger's runs; selecting one opens its monitor."""
    from zeroshot_widgets.browser import RunBrowser

    browser = RunBrowser(open_client(ledger, target))
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
    variable: Annotated[
        str | None,
        typer.Option("--as", help="Also keep the parsed graph in this notebook variable."),
    ] = None,
) -> None:
    """Every admission check on the cell's graph, as ``zeroshot validate`` does.

    Example: %%zeroshot_graph --as graph --input '{"task": "x"}'
    """
    from zeroshot_kernel.cli.validate_command import report_validation
    from zeroshot_kernel.contract.reading import DocumentError, loads_document

    if variable is not None and (not variable.isidentifier() or keyword.iskeyword(variable)):
        fail_usage(f"--as {variable!r}: not a Python variable name")
    invocation = _invocation(ctx)
    try:
        document = loads_document(invocation.cell)
    except DocumentError as error:
        fail_usage(str(error))
    if variable is not None and invocation.magics.shell is not None:
        invocation.magics.shell.user_ns[variable] = document
    report_validation(
        document, "graph", input=input, runtime=runtime, registry=registry, as_json=as_json
    )


@magics_class
class ZeroshotMagics(Magics):
    """``%zeroshot`` and ``%%zeroshot_graph``; remembers the widgets it showed so that
    unloading the extension stops their pollers."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.shown: list[Any] = []
        self._latest: Any = None
        """The run id these magics named last, or the monitor they showed last."""
        self._latest_client: Client | None = None

    @property
    def latest_run(self) -> str | None:
        """The run these magics launched or showed last; when that was a monitor whose
        Continue moved it on to a new run, the run it follows now."""
        latest = self._latest
        return latest if latest is None or isinstance(latest, str) else str(latest.run_id)

    def remember(self, latest: Any, client: Client) -> None:
        """Make ``latest`` (a run id, or a monitor) what ``wait`` and ``report`` default to,
        read through ``client`` (the ledger it was launched or shown from)."""
        self._latest = latest
        self._latest_client = client

    def client_for(self, run_id: str | None, ledger: str | None, target: str | None) -> Client:
        """Where a command reads ``run_id`` (``None``: the latest run): the ledger or target
        it names, else the latest run's own ledger when it reads that run, else the
        default."""
        named = ledger is not None or target is not None
        if not named and run_id in (None, self.latest_run) and self._latest_client is not None:
            return self._latest_client
        return open_client(ledger, target)

    @line_magic
    def zeroshot(self, line: str) -> None:
        """%zeroshot COMMAND [ARGS]: templates, research, runs, status, monitor, wait,
        report, browse, stop. ``%zeroshot COMMAND --help`` describes each."""
        _invoke(line_app, LINE_PROG, line or "--help", Invocation(self))  # bare: its help

    @cell_magic
    def zeroshot_graph(self, line: str, cell: str) -> None:
        """%%zeroshot_graph [--as VAR] [--input JSON] [--runtime JSON] [--registry FILE]
        [--json]: validate the graph written in the cell (JSON or YAML)."""
        _invoke(graph_app, CELL_PROG, line, Invocation(self, cell))

    def close(self) -> None:
        """Stop the pollers of every monitor and browser these magics showed."""
        for widget in self.shown:
            widget.close()
        self.shown.clear()


def _show_monitor(ctx: typer.Context, client: Any, run_id: str) -> None:
    from zeroshot_widgets.monitor import RunMonitor

    widget = RunMonitor(client, run_id)
    magics = _invocation(ctx).magics
    magics.shown.append(widget)
    magics.remember(widget, client)
    _display(widget)


def _chosen_run(magics: ZeroshotMagics, run_id: str | None) -> str:
    if run_id is not None:
        return run_id
    if magics.latest_run is None:
        fail_usage("no run launched or shown yet: name one (%zeroshot runs lists them)")
    return magics.latest_run


def _display(widget: Any) -> None:
    from IPython.display import display

    display(widget)  # type: ignore[no-untyped-call]


def _invocation(ctx: typer.Context) -> Invocation:
    invocation = ctx.find_object(Invocation)
    if invocation is None:  # pragma: no cover - every magic passes one
        raise RuntimeError("a magic command ran outside a magic")
    return invocation


def _invoke(app: typer.Typer, prog: str, line: str, invocation: Invocation) -> None:
    """Run a command as the CLI would (its errors print the CLI's texts). Its exit status
    ends the command, never the kernel; a failure raises IPython's ``UsageError`` (one
    line, no traceback), so the cell fails and a notebook run headless (papermill, ``zeroshot
    batch``) stops there instead of going on as if the command had worked."""
    try:
        args = shlex.split(line)
    except ValueError as problem:
        raise UsageError(f"{prog} {line}: {problem}") from None
    try:
        typer.main.get_command(app).main(args, prog_name=prog, standalone_mode=True, obj=invocation)
        status: object = 0
    except SystemExit as exited:
        status = exited.code
    except SandboxUnavailable as refused:  # one line, as the CLI's main prints it
        typer.echo(f"error: {refused}", err=True)
        status = EXIT_REJECTED
    if status not in (0, None):
        command = args[0] if args and not args[0].startswith("-") else ""
        raise UsageError(f"{prog} {command} failed (exit status {status}): the error is above")
