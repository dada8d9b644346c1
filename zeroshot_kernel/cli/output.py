"""Shared CLI plumbing: reading documents, printing diagnostics, exit codes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer

from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
from zeroshot_kernel.contract.parse import DocumentError, load_document, loads_document

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2


def fail_usage(message: str) -> NoReturn:
    """Print ``message`` to stderr and exit 2 (usage error or unreadable input)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def read_document(path: Path) -> Any:
    try:
        return load_document(path)
    except DocumentError as error:
        fail_usage(str(error))


def read_inline_or_file(value: str, what: str) -> Any:
    """``JSON`` inline, or a JSON/YAML file given as ``@path`` or as an existing path."""
    try:
        if value.startswith("@"):
            return load_document(value[1:])
        if not value.lstrip().startswith(("{", "[", '"')) and Path(value).is_file():
            return load_document(value)
        return loads_document(value, yaml_allowed=False)
    except DocumentError as error:
        fail_usage(f"{what}: {error}")


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def print_diagnostics(diagnostics: Sequence[GraphDiagnostic]) -> None:
    """One block per diagnostic: severity, code, readable path, then what to change."""
    for diagnostic in diagnostics:
        related = (
            f"  (nodes: {', '.join(diagnostic.related_nodes)})" if diagnostic.related_nodes else ""
        )
        typer.echo(
            f"{diagnostic.severity}: {diagnostic.code} at {diagnostic.readable_path()}{related}"
        )
        typer.echo(f"    {diagnostic.message}")
    count = len(diagnostics)
    typer.echo(f"{count} problem{'s' if count != 1 else ''} found.")
