"""``zeroshot change run``: a software change in the run's own worktree, reviewed under
the review discipline and delivered by trusted code (none, push, pull request, ship)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from zeroshot_kernel.console.options import LedgerOption, SandboxOption, TargetOption, open_client
from zeroshot_kernel.console.outline import show_expansion
from zeroshot_kernel.console.output import EXIT_OK, EXIT_REJECTED, fail_usage, print_diagnostics
from zeroshot_kernel.sandbox import sandbox_mode

if TYPE_CHECKING:
    from collections.abc import Iterator

    from zeroshot_kernel.client import Client, Run
    from zeroshot_kernel.console.follow import Shown
    from zeroshot_kernel.ledger.events import TerminalResult
    from zeroshot_kernel.software_change.review.classify import Classification

change_app = typer.Typer(
    help="Software changes: owner, reviewers, trusted git delivery.", no_args_is_help=True
)

TierOption = Annotated[
    str | None,
    typer.Option(help="Review tier: micro, standard, high-risk or auto.", show_default="standard"),
]
DeprecatedProfileOption = Annotated[
    str | None, typer.Option(hidden=True, help="Deprecated alias of --tier.")
]
"""``--profile``, the review tier's old name, kept hidden so existing scripts still work
(``zeroshot run --profile`` is another thing: a saved profile)."""


@change_app.command("run")
def run(
    task: Annotated[str, typer.Argument(help="What to change, in words.")],
    delivery: Annotated[
        str | None,
        typer.Option(
            help="none (keep the change in the run's worktree), push (publish the managed "
            "branch), pr (open or update a pull request; the default) or ship (pr, then "
            "merge).",
            show_default=False,
        ),
    ] = None,
    push: Annotated[bool, typer.Option("--push", help="Short for --delivery push.")] = False,
    pr: Annotated[bool, typer.Option("--pr", help="Short for --delivery pr.")] = False,
    ship: Annotated[bool, typer.Option("--ship", help="Short for --delivery ship.")] = False,
    no_pr_feedback: Annotated[
        bool,
        typer.Option(
            "--no-pr-feedback", help="Do not read pull request reviews into the repair loop."
        ),
    ] = False,
    tier: TierOption = None,
    profile: DeprecatedProfileOption = None,
    check: Annotated[
        list[str] | None,
        typer.Option("--check", help="A command whose receipt proves the change (repeatable)."),
    ] = None,
    harness: Annotated[
        str,
        typer.Option(help="Harness of the coding agent and reviewers: claude (default) or codex."),
    ] = "claude",
    model: Annotated[str | None, typer.Option(help="Model for the agents.")] = None,
    github_api: Annotated[
        str | None,
        typer.Option(
            "--github-api",
            envvar="ZEROSHOT_GITHUB_API",
            help="GitHub REST base URL (GitHub Enterprise: https://HOST/api/v3).",
        ),
    ] = None,
    allow_unproven: Annotated[
        bool,
        typer.Option(
            "--allow-unproven",
            help="Deliver (push, pr, ship) even when the completion decision is not "
            "CANDIDATE_COMPLETE; the receipt and the final line then say it is unproven "
            "and why.",
        ),
    ] = False,
    detach: Annotated[bool, typer.Option("--detach", help="Return at once.")] = False,
    sandbox: SandboxOption = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Change the repository around the current directory as TASK says.

    Example: zeroshot change run "Fix the off-by-one in pager.py" --delivery push
    """
    import asyncio

    from zeroshot_kernel.client import AdmissionRejected
    from zeroshot_kernel.delivery import DeliveryRefused
    from zeroshot_kernel.software_change.prepare import prepare, submit_change
    from zeroshot_kernel.software_change.review.tiers import resolve_tier
    from zeroshot_kernel.software_change.template import DELIVERY_MODES
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    tier = _tier("run", tier, profile)
    delivery = _delivery(delivery, push=push, pr=pr, ship=ship)
    if delivery not in DELIVERY_MODES:
        fail_usage(f"--delivery must be one of {', '.join(DELIVERY_MODES)}, not {delivery!r}")
    try:
        resolved = resolve_tier(tier)
    except ValueError as problem:
        fail_usage(str(problem))
    client = open_client(ledger, target)
    try:
        prepared = asyncio.run(prepare(Path.cwd(), delivery, allow_unproven=allow_unproven))
    except DeliveryRefused as refused:
        fail_usage(str(refused))
    classification = _classified(client, task, harness, model) if tier == "auto" else None
    if classification is not None:
        resolved = classification.tier
    expansion = expand_template(
        "software-change",
        TemplateOptions(
            task=task,
            harness=harness,
            model=model,
            delivery=delivery,
            tier=resolved,
            checks=tuple(check or ()),
            prepared=prepared.delivery(delivery, feedback=not no_pr_feedback, api_url=github_api),
            classification=classification.to_input() if classification is not None else None,
            sandbox=sandbox_mode(sandbox),
        ),
    )
    try:
        started = submit_change(
            client,
            prepared,
            graph=expansion.graph,
            input=expansion.input,
            runtime=expansion.runtime,
            title=f"software-change: {task[:200]}",
        )
    except AdmissionRejected as rejected:
        print_diagnostics(rejected.diagnostics)
        raise typer.Exit(EXIT_REJECTED) from None
    branch = (
        ""
        if prepared.target is None
        else f", target {prepared.target.remote.name}/{prepared.target.branch}"
    )
    typer.echo(
        f"started {started.id}: tier {resolved}, delivery {delivery}{branch}; "
        f"worktree .zeroshot/worktrees/{started.id} on zeroshot/{started.id}"
    )
    from zeroshot_kernel.console.event_lines import containment_note

    note = containment_note(started.sandbox)
    if note is not None:
        typer.echo(note, err=True)
    if detach:
        typer.echo(
            f"see it with: zeroshot status {started.id}; "
            f"follow its events with: zeroshot watch {started.id}"
        )
        raise typer.Exit(EXIT_OK)
    _follow(started)


def _follow(started: Run) -> None:
    """Wait for the change's end and print its final line (and why it failed); Ctrl-C
    detaches at once (exit 130, see :func:`~zeroshot_kernel.console.follow.follow`)."""
    from zeroshot_kernel.console.follow import follow

    follow(
        _final_lines(started),
        lambda _: (
            f"\ndetached; {started.id} keeps running. See it with: zeroshot status {started.id}"
        ),
    )


def _final_lines(started: Run) -> Iterator[Shown]:
    """Read on :func:`_follow`'s reading thread; ends by raising ``typer.Exit`` with the
    run's exit status."""
    from zeroshot_kernel.console.event_lines import containment_note, describe_result
    from zeroshot_kernel.console.follow import CHECK_EVERY_S, ControllerWatch, failure_lines
    from zeroshot_kernel.ledger.events import SucceededResult

    watch = ControllerWatch(started)
    while True:
        try:
            result = started.result(CHECK_EVERY_S)
            break
        except TimeoutError:
            watch.check()
    yield f"finished: {describe_result(result)}{_trust_note(started, result)}", None
    if not isinstance(result, SucceededResult):
        yield from ((line, None) for line in failure_lines(started))
        yield "its worktree is kept for inspection; remove it with: zeroshot change clean", None
    note = containment_note(started.sandbox)
    if note is not None:
        yield note, None
    raise typer.Exit(EXIT_OK if isinstance(result, SucceededResult) else EXIT_REJECTED)


def _trust_note(run: Run, result: TerminalResult) -> str:
    """What the final line adds: UNPROVEN for an unproven delivery (with the decision), or
    the trust check's one-line reason for a run it failed."""
    from zeroshot_kernel.contract.outcome import VerifierOutcome
    from zeroshot_kernel.ledger.events import NodeCompleted, SucceededResult

    if isinstance(result, SucceededResult):
        output = result.output if isinstance(result.output, dict) else {}
        unproven = (output.get("receipt") or {}).get("unproven")
        return f" - UNPROVEN delivery (--allow-unproven): {unproven}" if unproven else ""
    message = ""
    for _, event in run.events():
        if (
            isinstance(event, NodeCompleted)
            and event.completion.reference.node == "trust_check"
            and isinstance(event.completion.outcome, VerifierOutcome)
            and isinstance(event.completion.outcome.diagnostic, dict)
        ):
            message = str(event.completion.outcome.diagnostic.get("message", ""))
    return f" - {message}" if message else ""


@change_app.command("clean")
def clean(
    include_succeeded: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Also remove the worktrees of runs that succeeded (with --delivery "
            "none their change exists only there).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")
    ] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Remove the worktrees (.zeroshot/worktrees/RUN, and .zeroshot/publish/RUN of
    research runs that pushed) and local branches (zeroshot/RUN) of finished runs that
    failed. Unfinished runs are never touched.

    Example: zeroshot change clean --dry-run
    """
    import asyncio

    from zeroshot_kernel.delivery.cleanup import clean_runs
    from zeroshot_kernel.delivery.worktree import DeliveryRefused, open_repository
    from zeroshot_kernel.ledger.events import SucceededResult

    client = open_client(ledger, target)
    try:
        repository = asyncio.run(open_repository(client.workspace))
    except DeliveryRefused as refused:
        fail_usage(str(refused))
    finished = {
        run.run_id: isinstance(run.terminal, SucceededResult)
        for run in client.runs()
        if run.terminal is not None
    }
    cleaned = asyncio.run(
        clean_runs(repository, finished, include_succeeded=include_succeeded, dry_run=dry_run)
    )
    verb = "would remove" if dry_run else "removed"
    for item in cleaned:
        parts = [*(["worktree"] if item.worktree else []), *(["branch"] if item.branch else [])]
        typer.echo(f"{verb} {' and '.join(parts)} of {item.run_id}")
    if not cleaned:
        typer.echo("nothing to clean")


def _tier(command: str, tier: str | None, profile: str | None) -> str:
    """``--tier``, else the deprecated ``--profile`` (with a one-line note on stderr), else
    ``standard``."""
    if profile is None:
        return tier or "standard"
    typer.echo(f"note: `zeroshot change {command} --profile` is deprecated; use --tier", err=True)
    if tier is not None and tier != profile:
        fail_usage(
            f"--tier {tier} and the deprecated --profile {profile} disagree; give only --tier"
        )
    return profile


def _delivery(given: str | None, **flags: bool) -> str:
    """``--delivery MODE`` or one of its short flags (default ``pr``)."""
    chosen = {mode for mode, on in flags.items() if on} | ({given} if given else set())
    if len(chosen) > 1:
        fail_usage(f"choose one delivery, not {' and '.join(sorted(chosen))}")
    return chosen.pop() if chosen else "pr"


def _classified(client: Client, task: str, harness: str, model: str | None) -> Classification:
    """``--tier auto``: the read-only classifier's run, then the rules."""
    from zeroshot_kernel.client import AdmissionRejected
    from zeroshot_kernel.software_change.classifier_graph import classifier_runtime
    from zeroshot_kernel.software_change.review.classify import ClassificationFailed, classify
    from zeroshot_kernel.software_change.template import SOFTWARE_CHANGE_MODEL

    if harness == "claude" and not model:
        model = SOFTWARE_CHANGE_MODEL
    typer.echo("tier auto: a read-only classifier rates the change first")
    try:
        found = classify(client, task, runtime=classifier_runtime(harness, model))
    except AdmissionRejected as rejected:
        print_diagnostics(rejected.diagnostics)
        raise typer.Exit(EXIT_REJECTED) from None
    except ClassificationFailed as failed:
        typer.echo(f"error: {failed}", err=True)
        raise typer.Exit(EXIT_REJECTED) from None
    typer.echo(f"tier auto: {found.describe()}, by the rules from {found.run_id}")
    return found


@change_app.command("show")
def show(
    delivery: Annotated[str, typer.Option(help="none, push, pr or ship.")] = "pr",
    tier: Annotated[
        str | None,
        typer.Option(
            help="Review tier: micro, standard, high-risk or auto (the classifier's graph).",
            show_default="standard",
        ),
    ] = None,
    profile: DeprecatedProfileOption = None,
    harness: Annotated[str, typer.Option(help="claude (default) or codex.")] = "claude",
    model: Annotated[str | None, typer.Option(help="Model for the agents.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print {graph, input, runtime}.")] = False,
) -> None:
    """Print the graph a software change expands to for a delivery mode and review tier.

    With --tier auto: the classifier's graph, which runs first; the rules then choose
    micro, standard or high-risk from its ratings.

    Example: zeroshot change show --delivery ship --tier high-risk
    """
    from zeroshot_kernel.software_change.classifier_graph import (
        classifier_graph,
        classifier_runtime,
    )
    from zeroshot_kernel.software_change.review.tiers import resolve_tier
    from zeroshot_kernel.templates import Expansion, TemplateOptions, expand_template

    tier = _tier("show", tier, profile)
    try:
        resolve_tier(tier)  # an unknown tier is refused in `change run`'s words
    except ValueError as problem:
        fail_usage(str(problem))
    if tier == "auto":
        show_expansion(
            Expansion(
                graph=classifier_graph(),
                input={"task": ""},
                runtime=classifier_runtime(harness, model),
            ),
            as_json,
        )
        return
    try:
        expansion = expand_template(
            "software-change",
            TemplateOptions(harness=harness, model=model, delivery=delivery, tier=tier),
        )
    except ValueError as problem:
        fail_usage(str(problem))
    show_expansion(expansion, as_json)
