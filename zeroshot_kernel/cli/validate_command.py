"""``zeroshot validate``: every admission check, nothing created."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from zeroshot_kernel.console.output import (
    EXIT_OK,
    EXIT_REJECTED,
    fail_usage,
    print_diagnostics,
    print_json,
    read_document,
    read_input,
    read_runtime,
)


def validate(
    graph: Annotated[Path, typer.Argument(help="Graph document (JSON or YAML).")],
    input: Annotated[
        str | None, typer.Option("--input", help="Initial input to check: JSON or @file.")
    ] = None,
    runtime: Annotated[
        str | None, typer.Option("--runtime", help="Runtime plan to check: JSON or @file.")
    ] = None,
    registry: Annotated[
        Path | None,
        typer.Option(
            "--registry",
            help="Check workers against this registry file (name@version -> descriptor).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON envelope instead of text.")
    ] = False,
) -> None:
    """Run every admission check on a graph; create nothing, contact nothing.

    Without --input/--runtime only the graph is verified. Exit status: 0 admitted,
    1 rejected (a graph over the reading limits too: too large, too deep, an alias bomb),
    2 a file that cannot be read, an unreadable --input/--runtime, or bad usage.

    Example: zeroshot validate graph.json --input '{"task": "x"}' --runtime @plan.json --json
    """
    report_validation(
        read_document(graph, as_json=as_json),
        str(graph),
        input=input,
        runtime=runtime,
        registry=registry,
        as_json=as_json,
    )


def report_validation(
    document: object,
    label: str,
    *,
    input: str | None,
    runtime: str | None,
    registry: Path | None,
    as_json: bool,
) -> None:
    """Run the admission checks on a parsed document, print the outcome and exit with
    its status (shared by ``zeroshot validate`` and ``%%zeroshot_graph``)."""
    from zeroshot_kernel.admission.admit import admit, verify_document
    from zeroshot_kernel.admission.worker_registry import FileRegistry, RegistryFileError
    from zeroshot_kernel.workspace import find_workspace

    workers = None
    if registry is not None:
        try:
            workers = FileRegistry.load(registry)
        except RegistryFileError as problem:
            fail_usage(str(problem))
    verification = verify_document(document, workers)
    envelope = verification.envelope()
    diagnostics = verification.diagnostics
    if verification.compiled_ir is not None and (input is not None or runtime is not None):
        admission = admit(
            document,  # type: ignore[arg-type]
            initial_input=read_input(input, document) if input is not None else None,
            runtime=read_runtime(runtime) if runtime is not None else None,
            registry=workers,
            require_runtime=runtime is not None,
            workspace=find_workspace(),
        )
        if not admission.ok:
            diagnostics = admission.diagnostics
            envelope = {"status": "rejected", "diagnostics": [d.to_wire() for d in diagnostics]}
    ok = envelope["status"] == "verified"
    if as_json:
        print_json(envelope)
    elif ok:
        typer.echo(f"{label}: verified (identity {envelope['identity']})")
    else:
        print_diagnostics(diagnostics)
    raise typer.Exit(EXIT_OK if ok else EXIT_REJECTED)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
