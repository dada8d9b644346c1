"""The ``zeroshot`` application: one Typer app, one module per command group."""

from __future__ import annotations

import os
import sys

import typer

from zeroshot_kernel.cli import (
    batch_commands,
    graph_commands,
    profile_commands,
    provider_commands,
    run_commands,
    target_commands,
    template_commands,
    validate_command,
)
from zeroshot_kernel.cli.crash_reports import write_report
from zeroshot_kernel.features import contributions

app = typer.Typer(
    name="zeroshot",
    help=(
        "Admit and run typed agent graphs, do auto-research, and read every run from a "
        "durable ledger.\n\n\b\nExamples:\n"
        "  zeroshot validate examples/headline.yaml\n"
        "  zeroshot research run rosenbrock --iterations 5\n"
        "  zeroshot batch research_templates/research.ipynb -p task branin\n"
        "  zeroshot run --profile nightly --target shared\n"
        "  zeroshot schema graph > graph.schema.json"
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
validate_command.register(app)
run_commands.register(app)
provider_commands.register(app)
for _name, _load in contributions("commands").items():  # the features' sub-apps
    app.add_typer(_load(), name=_name)
app.add_typer(template_commands.template_app, name="template")
app.add_typer(batch_commands.batch_app, name="batch")
app.add_typer(profile_commands.profile_app, name="profile")
app.add_typer(target_commands.target_app, name="target")
app.add_typer(graph_commands.graph_app, name="graph")
app.add_typer(graph_commands.schema_app, name="schema")


EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def main() -> None:
    """Console-script entry point: whatever happens, one line on stderr, never a traceback.

    A ledger that cannot be used (damaged, full, read-only, locked, unreachable) is named
    with its problem, exit 2; anything unexpected is reported in one line that says where
    the full report (with its traceback) was written, exit 2.
    """
    for position, argument in enumerate(sys.argv[1:], start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            _fail(f"argument {position} is not valid UTF-8 text")
    try:
        app()
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as bug:
        # imported here, not above: a command that ends well never loads the ledger's errors
        from zeroshot_kernel.ledger.errors import LedgerError
        from zeroshot_kernel.sandbox.bwrap import SandboxUnavailable

        if isinstance(bug, LedgerError | SandboxUnavailable):
            _fail(str(bug))
        report = write_report()
        where = f"; the full report is in {report}" if report else ""
        _fail(f"internal error: {type(bug).__name__}: {_first_line(bug)}{where}")


def _fail(message: str, code: int = EXIT_USAGE) -> None:
    from zeroshot_kernel.console.output import hide_passwords, printable

    text = printable(f"error: {hide_passwords(message)}")
    print(text, file=sys.stderr)
    sys.exit(code)


def _first_line(problem: BaseException) -> str:
    text = (str(problem).strip().splitlines() or [""])[0]
    return text if len(text) <= 300 else text[:297] + "..."
