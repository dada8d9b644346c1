"""``zeroshot template list | show``: built-in templates are ordinary graphs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from zeroshot_kernel.cli.output import fail_usage, print_json
from zeroshot_kernel.contract.documents import child_documents

TaskOption = Annotated[str, typer.Option(help="Template: task text or research task folder.")]
IterationsOption = Annotated[
    int | None, typer.Option(min=1, max=100, help="auto-research rounds (default 10).")
]
PushOption = Annotated[bool, typer.Option("--push", help="auto-research: publish rounds.")]
HarnessOption = Annotated[str, typer.Option(help="local, python, claude, codex or openai.")]
BASE_URL_ENV = "ZEROSHOT_OPENAI_BASE_URL"
BaseUrlOption = Annotated[str | None, typer.Option(
    "--base-url", envvar=BASE_URL_ENV, show_default=False,
    help="openai harness: the OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 "
         f"(default: ${BASE_URL_ENV}, else $OPENAI_BASE_URL, else the hosted API). Its key "
         "is read from OPENAI_API_KEY when set; a local server needs none.")]
MaxTokensOption = Annotated[int | None, typer.Option(
    "--max-tokens", min=1, max=1_000_000, show_default=False,
    help="openai harness: the most tokens one reply may take (default 4096).")]

if TYPE_CHECKING:
    from zeroshot_kernel.templates import Expansion

template_app = typer.Typer(help="Built-in templates and the graphs they expand to.",
                           no_args_is_help=True)


@template_app.command("list")
def list_templates() -> None:
    """List the built-in templates."""
    from zeroshot_kernel.templates import TEMPLATES

    for template in TEMPLATES.values():
        typer.echo(f"{template.name:<15} {template.summary}")


@template_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Template name (see `zeroshot template list`).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print {graph, input, runtime} as JSON.")
    ] = False,
    task: TaskOption = "",
    iterations: IterationsOption = None,
    push: PushOption = False,
    harness: HarnessOption = "local",
    base_url: BaseUrlOption = None,
    max_tokens: MaxTokensOption = None,
) -> None:
    """Print the graph a template expands to (an outline, or the JSON to copy and change).

    Example: zeroshot template show auto-research --iterations 3 --json > my-graph.json
    """
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    try:
        expansion = expand_template(
            name, TemplateOptions(task=task, iterations=iterations, push=push, harness=harness,
                                  base_url=base_url, max_tokens=max_tokens)
        )
    except (KeyError, ValueError) as unknown:
        fail_usage(str(unknown.args[0]))
    show_expansion(expansion, as_json)


def show_expansion(expansion: Expansion, as_json: bool) -> None:
    """``{graph, input, runtime}`` as JSON, or the graph's outline."""
    if as_json:
        print_json({"graph": expansion.graph, "input": expansion.input,
                    "runtime": expansion.runtime})
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
