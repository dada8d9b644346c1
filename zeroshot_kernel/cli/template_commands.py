"""``zeroshot template list | show``: built-in templates are ordinary graphs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from zeroshot_kernel.auto_research.launch import declared
from zeroshot_kernel.console.options import (
    HarnessOption,
    TaskOption,
)
from zeroshot_kernel.console.outline import show_expansion
from zeroshot_kernel.console.output import fail_usage

if TYPE_CHECKING:
    pass

template_app = typer.Typer(
    help="Built-in templates and the graphs they expand to.", no_args_is_help=True
)


@template_app.command("list")
def list_templates() -> None:
    """List the templates: the core's and the installed features'."""
    from zeroshot_kernel.templates import templates

    for template in templates().values():
        typer.echo(f"{template.name:<15} {template.summary}")


@template_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Template name (see `zeroshot template list`).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print {graph, input, runtime} as JSON.")
    ] = False,
    task: TaskOption = "",
    iterations: Annotated[int | None, declared("iterations")] = None,
    push: Annotated[bool, declared("push")] = False,
    dask: Annotated[str | None, declared("dask")] = None,
    parallel: Annotated[int | None, declared("parallel")] = None,
    harness: HarnessOption = "local",
    base_url: Annotated[str | None, declared("base_url")] = None,
    max_tokens: Annotated[int | None, declared("max_tokens")] = None,
) -> None:
    """Print the graph a template expands to (an outline, or the JSON to copy and change).

    Example: zeroshot template show auto-research --iterations 3 --json > auto-research.json
    """
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    try:
        expansion = expand_template(
            name,
            TemplateOptions(
                task=task,
                iterations=iterations,
                push=push,
                dask=dask,
                parallel=parallel,
                harness=harness,
                base_url=base_url,
                max_tokens=max_tokens,
            ),
        )
    except (KeyError, ValueError) as unknown:
        fail_usage(str(unknown.args[0]))
    show_expansion(expansion, as_json)
