"""``zeroshot profile save | list | show | delete``: named submissions kept at a target."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from zeroshot_kernel.auto_research.launch import declared
from zeroshot_kernel.console.options import (
    HarnessOption,
    LedgerOption,
    SandboxOption,
    TargetOption,
    TaskOption,
    open_client,
)
from zeroshot_kernel.console.outline import outline
from zeroshot_kernel.console.output import (
    EXIT_REJECTED,
    fail_usage,
    print_diagnostics,
    print_json,
    read_document,
    read_input,
    read_runtime,
)
from zeroshot_kernel.sandbox import sandbox_mode

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client
    from zeroshot_kernel.profiles import Profile

profile_app = typer.Typer(
    help="Saved profiles: a graph (or an expanded template), its runtime plan and default "
    "input, stored at a target and run with `zeroshot run --profile NAME`.\n\n\b\nExamples:\n"
    "  zeroshot profile save fix-tests --graph loop.yaml --runtime plan.json --input task.json\n"
    "  zeroshot profile save branin --template auto-research --task branin --iterations 3\n"
    "  zeroshot run --profile branin --validate-only\n"
    "  zeroshot profile show branin --json",
    no_args_is_help=True,
)
NameArgument = Annotated[str, typer.Argument(help="Profile name, e.g. nightly-review.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@profile_app.command("save")
def save(
    name: NameArgument,
    template: Annotated[
        str | None, typer.Option(help="Expand this built-in template now and store the result.")
    ] = None,
    graph: Annotated[
        Path | None, typer.Option(help="Graph document (JSON or YAML) to store.")
    ] = None,
    runtime: Annotated[
        str | None,
        typer.Option(
            help="Runtime plan: a file, @file or inline JSON (default with --template: the "
            "template's plan)."
        ),
    ] = None,
    input: Annotated[
        str | None,
        typer.Option(
            help="Default input: a file, @file or inline JSON (default with --template: the "
            "template's input)."
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="Title of the runs (default: NAME).")] = None,
    task: TaskOption = "",
    iterations: Annotated[int | None, declared("iterations")] = None,
    study: Annotated[
        str | None,
        typer.Option(
            help="Template auto-research: the study its runs continue (default: the task's name)."
        ),
    ] = None,
    push: Annotated[bool, declared("push")] = False,
    dask: Annotated[str | None, declared("dask")] = None,
    parallel: Annotated[int | None, declared("parallel")] = None,
    harness: HarnessOption = "local",
    provider: Annotated[str | None, typer.Option(help="Template: the harness's provider.")] = None,
    model: Annotated[str | None, typer.Option(help="Template: the agents' model.")] = None,
    base_url: Annotated[str | None, declared("base_url")] = None,
    max_tokens: Annotated[int | None, declared("max_tokens")] = None,
    sandbox: SandboxOption = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a saved profile of this name.")
    ] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Admit a submission (nothing runs) and store it as profile NAME at the target.

    Either --template (with its options) or --graph. The stored graph and plan are what
    every later `zeroshot run --profile NAME` runs, even after the template changes.
    """
    from zeroshot_kernel.client import AdmissionRejected
    from zeroshot_kernel.profiles import ProfileExists, TemplateSource, check_name

    try:
        check_name(name)
    except ValueError as problem:
        fail_usage(str(problem))
    if (template is None) == (graph is None):
        fail_usage("give exactly one of --template and --graph")
    plan = read_runtime(runtime) if runtime is not None else None
    default_input = read_input(input) if input is not None else None
    source = None
    if template is not None:
        options = {
            "task": task,
            "iterations": iterations,
            "study": study,
            "push": push,
            "dask": dask,
            "parallel": parallel,
            "harness": harness,
            "provider": provider,
            "model": model,
            "max_tokens": max_tokens,
            # only the openai harness reads it (the variable may be set for others)
            "base_url": base_url if harness == "openai" else None,
            "sandbox": sandbox_mode(sandbox),
        }
        expansion = _expand(template, options)
        document: Any = expansion.graph
        plan = expansion.runtime if plan is None else plan
        default_input = expansion.input if default_input is None else default_input
        source = TemplateSource(
            name=template, options={k: v for k, v in options.items() if v is not None}
        )
    else:
        assert graph is not None
        document = read_document(graph)
        if sandbox is not None:
            plan = {**(plan or {}), "sandbox": sandbox_mode(sandbox)}
    client = open_client(ledger, target)
    try:
        saved = client.save_profile(
            name,
            document,
            runtime=plan,
            input=default_input,
            title=title,
            template=source,
            replace=replace,
        )
    except AdmissionRejected as rejected:
        print_diagnostics(rejected.diagnostics)
        typer.echo(f"profile {name} was not saved", err=True)
        raise typer.Exit(EXIT_REJECTED) from None
    except ProfileExists as taken:
        fail_usage(f"{taken}: pass --replace")
    except ValueError as problem:
        fail_usage(str(problem))
    typer.echo(
        f"saved profile {saved.name} at {client.display_url} "
        f"(graph {saved.identity[:12]}); run it with: zeroshot run --profile {name}"
    )


def _expand(template: str, options: dict[str, Any]) -> Any:
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    if template == "software-change":
        fail_usage(
            "software-change prepares a worktree and delivery for each run; start it "
            "with `zeroshot change run` (a profile can hold its graph via --graph)"
        )
    if template == "auto-research":
        _check_task(str(options["task"] or ""))
    try:
        return expand_template(template, TemplateOptions(**options))
    except (KeyError, ValueError) as problem:
        fail_usage(str(problem.args[0]))


def _check_task(task: str) -> None:
    """Refuse, as `zeroshot research run` does, a research task that cannot be loaded from
    the workspace: saved, it would pass admission and fail every run it starts."""
    from zeroshot_kernel.auto_research.task import TaskError, resolve_task
    from zeroshot_kernel.workspace import find_workspace

    if not task:
        fail_usage("the auto-research template needs --task (a task folder or a bundled name)")
    try:
        resolve_task(task, find_workspace())
    except TaskError as problem:
        fail_usage(str(problem))


@profile_app.command("list")
def list_profiles(
    as_json: JsonOption = False, ledger: LedgerOption = None, target: TargetOption = None
) -> None:
    """List the profiles saved at the target."""
    client = open_client(ledger, target)
    profiles = client.profiles.list()
    if as_json:
        print_json([p.to_wire() for p in profiles])
        return
    if not profiles:
        typer.echo(f"no profiles at {client.display_url}")
    for profile in profiles:
        origin = f"template {profile.template.name}" if profile.template else "graph"
        typer.echo(
            f"{profile.name:<20} {_saved(profile):<19}  {profile.identity[:12]}  "
            f"{origin:<24} {profile.title[:40]}"
        )


@profile_app.command("show")
def show(
    name: NameArgument,
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Show a saved profile: where its graph came from, its outline, plan and input."""
    import json

    profile = _get(open_client(ledger, target), name)
    if as_json:
        print_json(profile.to_wire())
        return
    typer.echo(f"{profile.name}  {profile.title}")
    typer.echo(f"  saved:    {_saved(profile)}")
    typer.echo(f"  identity: {profile.identity}")
    if profile.template is not None:
        options = " ".join(
            f"--{k} {v}" for k, v in profile.template.options.items() if v not in ("", False)
        )
        typer.echo(f"  template: {profile.template.name} {options}".rstrip())
    nodes = ", ".join(profile.runtime.get("nodes", {}))
    typer.echo(f"  runtime:  harness {profile.runtime.get('harness', 'local')}; nodes {nodes}")
    typer.echo(f"  input:    {json.dumps(profile.input)}")
    typer.echo("  graph:")
    for line in outline(profile.graph["root"], 2):
        typer.echo(line)


@profile_app.command("delete")
def delete(name: NameArgument, ledger: LedgerOption = None, target: TargetOption = None) -> None:
    """Delete a saved profile; runs made from it keep their own admitted copy."""
    from zeroshot_kernel.profiles import ProfileNotFound

    client = open_client(ledger, target)
    try:
        client.profiles.delete(name)
    except ProfileNotFound as missing:
        fail_usage(str(missing.args[0]))
    typer.echo(f"deleted profile {name} from {client.display_url}")


def _get(client: Client, name: str) -> Profile:
    from zeroshot_kernel.profiles import ProfileNotFound

    try:
        return client.profiles.get(name)
    except ProfileNotFound as missing:
        fail_usage(str(missing.args[0]))


def _saved(profile: Profile) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(profile.saved_at))
