"""``zeroshot graph ...`` and ``zeroshot schema ...``: graph identity and JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from zeroshot_kernel.console.output import (
    EXIT_REJECTED,
    print_diagnostics,
    print_json,
    read_document,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

graph_app = typer.Typer(help="Inspect graphs.", no_args_is_help=True)
schema_app = typer.Typer(help="Print the JSON Schema of a contract document.", no_args_is_help=True)


@graph_app.command("identity")
def identity(
    graph: Annotated[Path, typer.Argument(help="Compiled graph IR (a graph with bounds).")],
) -> None:
    """Print the graph identity: the SHA-256 of the canonical compiled IR.

    Set-like reorderings (bindings, par branches, commutative guards) keep the
    identity; anything that changes behaviour changes it.

    Example: zeroshot graph identity compiled.json
    """
    from zeroshot_kernel.contract.canonical import graph_identity
    from zeroshot_kernel.contract.parse import parse_compiled_ir

    result = parse_compiled_ir(read_document(graph))
    if result.value is None:
        print_diagnostics(result.diagnostics)
        raise typer.Exit(EXIT_REJECTED)
    typer.echo(graph_identity(result.value))


_SCHEMAS: dict[str, str] = {
    "graph": "GraphSpec",
    "compiled-ir": "CompiledGraphIr",
    "diagnostic": "GraphDiagnostic",
    "artifact": "ArtifactRef",
}
"""Command -> the contract model whose schema it prints (imported when it runs)."""


def _models() -> dict[str, type[BaseModel]]:
    from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
    from zeroshot_kernel.contract.graph import CompiledGraphIr, GraphSpec
    from zeroshot_kernel.contract.outcome import ArtifactRef

    models: tuple[type[BaseModel], ...] = (GraphSpec, CompiledGraphIr, GraphDiagnostic, ArtifactRef)
    return {model.__name__: model for model in models}


def _schema_command(name: str, model: str) -> None:
    def show() -> None:
        print_json(_models()[model].model_json_schema(by_alias=True))

    show.__doc__ = f"JSON Schema of {model}, generated from the models."
    schema_app.command(name)(show)


for _name, _model in _SCHEMAS.items():
    _schema_command(_name, _model)
