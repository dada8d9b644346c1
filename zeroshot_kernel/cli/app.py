"""The ``zeroshot`` application: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from zeroshot_kernel.cli import (
    batch_commands,
    change_commands,
    graph_commands,
    profile_commands,
    provider_commands,
    research_commands,
    run_commands,
    target_commands,
    template_commands,
    validate_command,
)

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
app.add_typer(research_commands.research_app, name="research")
app.add_typer(change_commands.change_app, name="change")
app.add_typer(template_commands.template_app, name="template")
app.add_typer(batch_commands.batch_app, name="batch")
app.add_typer(profile_commands.profile_app, name="profile")
app.add_typer(target_commands.target_app, name="target")
app.add_typer(graph_commands.graph_app, name="graph")
app.add_typer(graph_commands.schema_app, name="schema")


def main() -> None:
    """Console-script entry point."""
    app()
