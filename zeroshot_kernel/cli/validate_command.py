"""``zeroshot validate``: every admission check, nothing created."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from zeroshot_kernel.cli.output import (
    EXIT_OK,
    EXIT_REJECTED,
    print_diagnostics,
    print_json,
    read_document,
)
from zeroshot_kernel.contract.parse import parse_graph


def validate(
    graph: Annotated[Path, typer.Argument(help="Graph document (JSON or YAML).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON envelope instead of text.")
    ] = False,
) -> None:
    """Check a graph and report every problem with its location.

    Exit status: 0 valid, 1 rejected, 2 unreadable input or bad usage.

    Example: zeroshot validate examples/review-loop.json --json
    """
    document = read_document(graph)
    result = parse_graph(document)
    if as_json:
        envelope = {
            "status": "verified" if result.ok else "rejected",
            "diagnostics": [d.to_wire() for d in result.diagnostics],
        }
        print_json(envelope)
    elif result.ok:
        typer.echo(f"{graph}: valid")
    else:
        print_diagnostics(result.diagnostics)
    raise typer.Exit(EXIT_OK if result.ok else EXIT_REJECTED)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
