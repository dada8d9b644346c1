"""Starting an auto-research run from ``zeroshot research run`` or ``%zeroshot research``:
the declared options (:mod:`zeroshot_kernel.auto_research.options`) as Typer options, and
one start both commands call, so they take the same options and refuse the same values
with the same words, before anything is recorded."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from zeroshot_kernel.auto_research.options import (
    RESEARCH_OPTIONS,
    OptionValue,
    ResearchOption,
    by_name,
    research_problems,
)
from zeroshot_kernel.console.options import open_client
from zeroshot_kernel.console.output import EXIT_REJECTED, fail_usage, print_diagnostics

if TYPE_CHECKING:
    from zeroshot_kernel.auto_research.task import TaskSpec
    from zeroshot_kernel.client import Client, Run
    from zeroshot_kernel.sandbox import SandboxMode
    from zeroshot_kernel.templates import TemplateOptions

Research = Mapping[str, OptionValue]
"""The declared options' values, by name."""


def declared(name: str) -> Any:
    """The declared option ``name`` as Typer's option (flag, bounds, help, environment), for
    a command that takes it with its own annotation: ``Annotated[int | None,
    declared("parallel")]`` (``zeroshot template show``, ``zeroshot profile save``)."""
    option = by_name(name)
    if option.kind is bool:
        return typer.Option(option.flag, help=option.help)
    return typer.Option(
        option.flag,
        min=option.low,
        max=option.high,
        envvar=option.envvar,
        show_default=option.default is not None and option.envvar is None,
        help=option.help,
    )


def typer_option(option: ResearchOption) -> Any:
    """``option`` as a Typer parameter annotation: its type (optional where its default is
    None) with :func:`declared`."""
    kind = option.kind if option.default is not None else option.kind | None
    return Annotated[kind, declared(option.name)]


def research_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a Typer command every declared research option, after its own parameters; the
    command receives their values together, as its ``research`` keyword."""
    own = inspect.signature(command, eval_str=True)
    kept = [p for p in own.parameters.values() if p.name != "research"]
    declared = [
        inspect.Parameter(
            option.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=option.default,
            annotation=typer_option(option),
        )
        for option in RESEARCH_OPTIONS
    ]
    positional = [p for p in kept if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keywords = [p for p in kept if p.kind is inspect.Parameter.KEYWORD_ONLY]
    parameters = [*positional, *declared, *keywords]

    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> None:
        research = {option.name: kwargs.pop(option.name) for option in RESEARCH_OPTIONS}
        command(*args, research=research, **kwargs)

    with_options.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_options


def launch_research(
    task: str,
    research: Research,
    *,
    sandbox: SandboxMode | None,
    ledger: str | None,
    target: str | None,
) -> Run:
    """Check everything that can be checked here, then submit, and say what started.

    Refused before anything is recorded: a task that cannot be loaded, or a study name or a
    dask address that cannot be used (exit 2); a harness that cannot run this research, or
    embedded agents on a task without a search space (exit 1); a rejected submission
    prints admission's diagnostics (exit 1)."""
    from zeroshot_kernel.auto_research.studies.catalog import study_of
    from zeroshot_kernel.auto_research.task import TaskError, resolve_task
    from zeroshot_kernel.auto_research.views import SELF_SCORED_NOTE
    from zeroshot_kernel.templates import TemplateOptions

    try:
        loaded = resolve_task(task, Path.cwd())
    except TaskError as problem:
        fail_usage(str(problem))
    harness = str(research["harness"])
    _check_embedded_agents(loaded.spec, harness)
    if loaded.spec.scored_by_candidate:
        typer.echo(f"task {loaded.spec.name}: {SELF_SCORED_NOTE}", err=True)
    client = open_client(ledger, target)
    for refused in research_problems(research):
        _refuse(refused)
    if research["dask"] is not None:
        _check_dask(str(research["dask"]))
    if research["push"]:
        _check_push(client.workspace)
    started = start_research(
        client,
        TemplateOptions(
            task=_task_reference(loaded.root, client.workspace),
            sandbox=sandbox,
            **research,  # type: ignore[arg-type]
        ),
        title=f"auto-research: {loaded.spec.name}",
    )
    typer.echo(
        f"started {started.id}: {loaded.spec.name}, {research['iterations']} rounds "
        f"(metric {loaded.spec.metric}, {loaded.spec.direction}), study "
        f"{study_of(started.admitted().get('initialInput'))}"
    )
    return started


def start_research(client: Client, options: TemplateOptions, *, title: str) -> Run:
    """Expand the auto-research template and submit it: a rejected submission prints its
    diagnostics and exits 1, a refused one (a busy study, an option out of range, a code
    task where no box can be made) says why and exits 2."""
    from zeroshot_kernel.auto_research.studies.catalog import StudyError
    from zeroshot_kernel.auto_research.template import TEMPLATE
    from zeroshot_kernel.client import AdmissionRejected
    from zeroshot_kernel.sandbox import SandboxUnavailable

    try:
        _require_box(client, options)
        expansion = TEMPLATE.expand(options)
        return client.submit(
            expansion.graph, input=expansion.input, runtime=expansion.runtime, title=title
        )
    except AdmissionRejected as rejected:  # a ValueError too: before the next clause
        print_diagnostics(rejected.diagnostics)
        raise typer.Exit(EXIT_REJECTED) from None
    except (StudyError, ValueError, SandboxUnavailable) as refused:
        fail_usage(str(refused))


def _refuse(problem: str) -> NoReturn:
    typer.echo(f"error: {problem}. Nothing was started.", err=True)
    raise typer.Exit(EXIT_REJECTED)


def _require_box(client: Client, options: TemplateOptions) -> None:
    """Raise ``SandboxUnavailable`` before anything starts for a code task whose
    experiments (model-written code) want a box where none can be made; a task that
    cannot be loaded is left to the run, which says what is wrong with it."""
    from zeroshot_kernel import sandbox
    from zeroshot_kernel.auto_research.task import TaskError, resolve_task

    if options.sandbox == "none":
        return
    try:
        task = resolve_task(options.task, client.workspace)
    except TaskError:
        return
    if task.spec.editable:
        sandbox.require()


def _check_dask(address: str) -> None:
    """Refuse, before anything is recorded, a scheduler the experiments could not use:
    the extra missing, a malformed address, or none answering there."""
    from zeroshot_kernel.dask_scheduler import SchedulerUnusable, connected

    try:
        with connected(address):
            pass
    except ImportError:
        fail_usage("--dask needs the dask extra: pip install 'zeroshot-workbench[dask]'")
    except SchedulerUnusable as problem:
        fail_usage(str(problem))


def _check_embedded_agents(spec: TaskSpec, harness: str) -> None:
    """Refuse, before anything is submitted, the embedded agents (``local``) on a task they
    cannot research: they propose parameters only, and the task has no search space."""
    problem = spec.embedded_agents_problem() if harness == "local" else None
    if problem is not None:
        _refuse(f"--harness {harness}: {problem}")


def _check_push(workspace: Path) -> None:
    """Refuse ``--push`` before any round runs when the workspace cannot deliver (not a
    repository, no commit, remote missing or unreachable), not after the first round."""
    import asyncio

    from zeroshot_kernel.auto_research.publish import preflight
    from zeroshot_kernel.delivery import DeliveryRefused

    try:
        asyncio.run(preflight(workspace))
    except DeliveryRefused as refused:
        fail_usage(str(refused))


def _task_reference(task: Path, workspace: Path) -> str:
    """The task as the run records it: relative to the workspace when inside it."""
    resolved = task.resolve()
    try:
        return str(resolved.relative_to(workspace))
    except ValueError:
        return str(resolved)
