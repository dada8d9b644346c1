"""A template's expansion as an outline of its graph, or as the JSON to copy and change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from zeroshot_kernel.console.output import print_json
from zeroshot_kernel.contract.documents import child_documents

if TYPE_CHECKING:
    from zeroshot_kernel.templates import Expansion


def show_expansion(expansion: Expansion, as_json: bool) -> None:
    """``{graph, input, runtime}`` as JSON, or the graph's outline."""
    if as_json:
        print_json(
            {"graph": expansion.graph, "input": expansion.input, "runtime": expansion.runtime}
        )
        return
    for line in outline(expansion.graph["root"]):
        typer.echo(line)


def outline(node: dict[str, Any], depth: int = 0) -> list[str]:
    """One line per node, indented by nesting, with what routes it."""
    pad = "  " * depth
    kind = node["kind"]
    lines = [f"{pad}{kind} {node['name']}" + _detail(node)]
    for child in child_documents(node):
        lines += outline(child, depth + 1)
    return lines


def _detail(node: dict[str, Any]) -> str:
    kind = node["kind"]
    if kind in ("step", "verifier"):
        return f"  ({node['worker']})"
    if kind == "loop":
        return f"  (at most {node['maxIterations']} iterations)"
    if kind == "par":
        return f"  (join {node['join']['kind']})"
    if kind == "fail":
        return f"  (reason {node['reason']})"
    return ""
