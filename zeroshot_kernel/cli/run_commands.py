"""``zeroshot run | list | status | logs | watch | stop | resume``: runs in a ledger."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from zeroshot_kernel.console.options import LedgerOption, SandboxOption, TargetOption, open_client
from zeroshot_kernel.console.output import (
    EXIT_OK,
    EXIT_REJECTED,
    camel_keys,
    fail_usage,
    print_diagnostics,
    print_json,
    printable,
    read_document,
    read_input,
    read_runtime,
)
from zeroshot_kernel.sandbox import sandbox_mode

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client, Run
    from zeroshot_kernel.console.follow import Shown

InputOption = Annotated[
    str | None,
    typer.Option("--input", help="Initial input: inline JSON, or a file (@file or its path)."),
]
RuntimeOption = Annotated[
    str | None,
    typer.Option("--runtime", help="Runtime plan: inline JSON, or a file (@file or its path)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
CursorOption = Annotated[
    str | None, typer.Option("--cursor", help="Start after this cursor (e.g. v2:12).")
]
RunArgument = Annotated[str, typer.Argument(help="Run id, e.g. run-abcdefghijkl.")]
FOLLOW_POLL_S = 0.1
"""How often a follower reads new events."""


def run(
    graph: Annotated[
        Path | None,
        typer.Argument(
            help="Graph document (JSON or YAML); omit with --profile.", show_default=False
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(help="Run a profile saved at the target (see `zeroshot profile list`)."),
    ] = None,
    input: InputOption = None,
    runtime: RuntimeOption = None,
    title: Annotated[str | None, typer.Option(help="Title shown in lists.")] = None,
    detach: Annotated[
        bool, typer.Option("--detach", help="Start the run and return at once.")
    ] = False,
    validate_only: Annotated[
        bool, typer.Option("--validate-only", help="Run every admission check; create nothing.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Machine-readable output: the admission with --validate-only, the run id "
            "with --detach, else JSON Lines (the run id, then each event with its cursor, "
            "then a failed run's cause).",
        ),
    ] = False,
    sandbox: SandboxOption = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Admit a graph (or a saved profile) and run it, streaming its events until it ends.

    With --profile the stored graph and runtime go through the same admission as an
    inline graph; --input replaces the profile's default input.
    Ctrl-C detaches (the run goes on); reattach with `zeroshot watch RUN`.

    \b
    Examples:
      zeroshot run graph.json --input '{"task": "fix it"}' --runtime @plan.json
      zeroshot run --profile nightly --target shared --validate-only
    """
    from zeroshot_kernel.auto_research.studies.catalog import StudyError
    from zeroshot_kernel.client import AdmissionRejected
    from zeroshot_kernel.profiles import ProfileNotFound

    if (graph is None) == (profile is None):
        fail_usage("give a graph file or --profile NAME (one of them)")
    if profile is not None and runtime is not None:
        fail_usage("a profile carries its runtime plan; save a new profile to change it")
    document: Any = read_document(graph, as_json=as_json) if graph is not None else None
    initial = read_input(input, document) if input is not None else None
    plan = read_runtime(runtime) if runtime is not None else None
    mode = sandbox_mode(sandbox)
    if mode is not None and plan is not None:
        plan = {**plan, "sandbox": mode}
    elif mode is not None and profile is None:
        plan = {"sandbox": mode}
    client = open_client(ledger, target)
    try:
        if validate_only:
            admission = (
                client.validate_profile(profile, input=initial)
                if profile
                else client.validate(document, input=initial, runtime=plan)
            )
            _report_admission(admission.ok, admission.diagnostics, as_json)
        if profile is not None:
            started = client.submit_profile(profile, input=initial, title=title, sandbox=mode)
        else:
            started = client.submit(
                document,
                input=initial,
                runtime=plan,
                title=title or (graph.stem if graph else None),
            )
    except ProfileNotFound as missing:
        fail_usage(str(missing.args[0]))
    except StudyError as refused:
        fail_usage(str(refused))
    except AdmissionRejected as rejected:
        _report_admission(False, rejected.diagnostics, as_json)
    if detach:
        if as_json:
            print_json({"runId": started.id})
        else:
            typer.echo(f"started {started.id}; follow it with: zeroshot watch {started.id}")
        raise typer.Exit(EXIT_OK)
    if as_json:  # JSON Lines: the run id, then one line per event (--json's help says)
        typer.echo(json.dumps({"runId": started.id}))
    else:
        typer.echo(f"started {started.id} (Ctrl-C detaches; the run goes on)")
    _say_containment(started)
    _follow(started, None, as_json=as_json)


def _say_containment(run_handle: Run) -> None:
    from zeroshot_kernel.console.event_lines import containment_note

    note = containment_note(run_handle.sandbox)
    if note is not None:
        typer.echo(note, err=True)


def _report_admission(ok: bool, diagnostics: list[Any], as_json: bool) -> NoReturn:
    if as_json:
        print_json(
            {
                "status": "verified" if ok else "rejected",
                "diagnostics": [d.to_wire() for d in diagnostics],
            }
        )
    elif ok:
        typer.echo("admissible: every check passed; nothing was created")
    else:
        print_diagnostics(diagnostics)
    raise typer.Exit(EXIT_OK if ok else EXIT_REJECTED)


def _follow(run_handle: Run, cursor: str | None, *, as_json: bool = False) -> None:
    """Print the run's events until it ends (``as_json``: one JSON object a line, the
    event as recorded and its cursor, then a failed run's cause); exit 0 when it
    succeeded, 1 when it failed, 3 when its controller died and the run is left
    unfinished; Ctrl-C detaches at once (exit 130) with the command that reattaches after
    the last event shown."""
    from zeroshot_kernel.console.follow import follow

    def detached(last: str | None) -> str:
        after = last or cursor
        return (
            f"\ndetached from {run_handle.id}; it keeps running. Reattach with: "
            f"zeroshot watch {run_handle.id}" + (f" --cursor {after}" if after else "")
        )

    follow(_event_lines(run_handle, cursor, as_json=as_json), detached)


def _event_lines(run_handle: Run, cursor: str | None, *, as_json: bool) -> Iterator[Shown]:
    """The run's event lines with their cursors, then its failure cause; ends by raising
    ``typer.Exit`` with the run's exit status."""
    from zeroshot_kernel.console.event_lines import EventRenderer, containment_note
    from zeroshot_kernel.console.follow import ControllerWatch, failure_lines
    from zeroshot_kernel.ledger.events import SucceededResult, Terminal
    from zeroshot_kernel.ledger.failure import explain_failure

    renderer = EventRenderer()
    watch = ControllerWatch(run_handle)
    last = cursor
    while True:
        for position, event in run_handle.events(last):
            last = position
            if as_json:
                yield json.dumps({"cursor": position, "event": event.to_wire()}), position
            else:
                yield printable(renderer.line(position, event)), position
            if isinstance(event, Terminal):
                succeeded = isinstance(event.result, SucceededResult)
                if as_json:
                    cause = (
                        None if succeeded else explain_failure(e for _, e in run_handle.events())
                    )
                    if cause is not None:
                        yield json.dumps({"failure": cause.to_wire()}), None
                    raise typer.Exit(EXIT_OK if succeeded else EXIT_REJECTED)
                if not succeeded:
                    yield from ((line, None) for line in failure_lines(run_handle))
                note = containment_note(run_handle.sandbox)
                if note is not None:
                    yield note, None
                raise typer.Exit(EXIT_OK if succeeded else EXIT_REJECTED)
        watch.check()
        time.sleep(FOLLOW_POLL_S)


def _run_handle(client: Client, run_id: str) -> Run:
    from zeroshot_kernel.ledger import RunNotFound

    try:
        return client.run(run_id)
    except RunNotFound:
        fail_usage(f"no run {run_id} in ledger {client.display_url}")


def list_runs(
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """List the runs in the ledger, newest first."""
    from zeroshot_kernel.console.event_lines import describe_result

    client = open_client(ledger, target)
    runs = sorted(client.runs(), key=lambda r: r.created_at, reverse=True)
    if as_json:
        print_json([r.to_wire() for r in runs])
        return
    if not runs:
        typer.echo(f"no runs in {client.display_url}")
    for summary in runs:
        result = describe_result(summary.terminal) if summary.terminal else summary.phase
        created = summary.created_at.strftime("%Y-%m-%d %H:%M:%S")
        typer.echo(f"{summary.run_id}  {created}  {summary.title[:40]:<40}  {result}")


def status(
    run_id: RunArgument,
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Show a run's phase, sandbox, active executions, result, the tokens and cost each
    execution reported, and a software change's review state."""
    from zeroshot_kernel.console.event_lines import containment_note, describe_result
    from zeroshot_kernel.engine.launch import last_log_line
    from zeroshot_kernel.harness.usage import describe_usage, execution_usage, run_usage
    from zeroshot_kernel.ledger.events import NodeCompleted
    from zeroshot_kernel.ledger.failure import explain_failure
    from zeroshot_kernel.software_change.review.ledger import latest_decision, review_lines

    handle = _run_handle(open_client(ledger, target), run_id)
    current = handle.status()
    events = [event for _, event in handle.events()]
    completed = [event for event in events if isinstance(event, NodeCompleted)]
    total, each = run_usage(completed), execution_usage(completed)
    cause = explain_failure(events)
    controller = handle.controller()
    last_words = (
        last_log_line(handle.client.workspace, handle.id) if controller.phase == "gone" else None
    )
    graph = handle.graph()
    review = latest_decision(graph, events)
    if as_json:
        document = current.to_wire()
        document["sandbox"] = handle.sandbox
        document["controller"] = {
            "phase": controller.phase,
            "owner": controller.owner,
            "why": controller.why,
            "lastLogLine": last_words,
        }
        if cause is not None:
            document["failure"] = cause.to_wire()
        if total is not None:
            document["usage"] = {
                "total": total.to_wire(),
                "executions": [
                    {"execution": execution, "node": node, "usage": usage.to_wire()}
                    for execution, node, usage in each
                ],
            }
        if review is not None:  # a software change: its decision, lifecycle and receipts
            document["review"] = camel_keys(review)
        print_json(document)
        return
    typer.echo(printable(f"{current.run_id}  {current.title}"))
    typer.echo(f"  phase:  {current.status.phase}   (at {current.at_cursor})")
    typer.echo(
        "  sandbox: bwrap (model-written code is boxed)"
        if handle.sandbox != "none"
        else f"  sandbox: none. {containment_note('none')}"
    )
    for active in current.status.active_executions or []:
        typer.echo(f"  active: {active.node}  {active.execution}")
    if controller.phase == "gone":
        typer.echo(
            f"  controller: gone ({controller.why}); resume it with `zeroshot resume {run_id}`"
        )
        if last_words:
            typer.echo(printable(f"    its log ends: {last_words}"))
    if current.status.terminal_result is not None:
        typer.echo(f"  result: {describe_result(current.status.terminal_result)}")
    if cause is not None and cause.node is not None:
        for line in cause.lines():
            typer.echo(printable(f"  {line}"))
    if total is not None:
        typer.echo(f"  usage:  {describe_usage(total)}")
        for execution, node, usage in each:
            typer.echo(f"    {node:<16} {execution}  {describe_usage(usage)}")
    for line in review_lines(graph, events):
        typer.echo(printable(f"  {line}"))


def logs(
    run_id: RunArgument,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep following.")] = False,
    cursor: CursorOption = None,
    as_json: JsonOption = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Print the lines workers printed (secrets redacted), with their cursors; for a
    failed run, then why it failed (the failing node, its error and its last error lines)."""
    handle = _run_handle(open_client(ledger, target), run_id)
    try:
        for position, line in handle.logs(cursor, follow=follow):
            if as_json:
                typer.echo(
                    printable(
                        json.dumps({"cursor": position, **line.to_wire()}, ensure_ascii=False)
                    )
                )
            else:
                typer.echo(printable(f"{position:>8}  [{line.stream}] {line.line}"))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if not as_json:
        from zeroshot_kernel.console.follow import print_failure_cause

        print_failure_cause(handle)


def watch(
    run_id: RunArgument,
    cursor: CursorOption = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Follow a run's events until it ends (from the start, or after --cursor)."""
    _follow(_run_handle(open_client(ledger, target), run_id), cursor)


def stop(run_id: RunArgument, ledger: LedgerOption = None, target: TargetOption = None) -> None:
    """Stop a run: one atomic close as failed/force_stopped."""
    handle = _run_handle(open_client(ledger, target), run_id)
    outcome = handle.stop()
    messages = {
        "already_finished": f"{run_id} had already finished",
        "requested": f"stop requested; the controller of {run_id} is closing it",
        "closed": f"{run_id} closed (no controller was running it)",
    }
    typer.echo(messages[outcome])


def resume(
    run_id: RunArgument,
    detach: Annotated[bool, typer.Option("--detach", help="Return at once.")] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Start a new controller for a run whose controller died (replays its history)."""
    from zeroshot_kernel.client import RunHeld
    from zeroshot_kernel.ledger import LedgerError

    client = open_client(ledger, target)
    handle = _run_handle(client, run_id)
    if handle.terminal is not None:
        typer.echo(f"{run_id} has already finished")
        raise typer.Exit(EXIT_OK)
    try:
        client.resume(run_id)
    except (LedgerError, RunHeld) as problem:
        fail_usage(str(problem))
    if detach:
        typer.echo(f"resumed {run_id}")
        raise typer.Exit(EXIT_OK)
    _follow(handle, None)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("list")(list_runs)
    app.command("status")(status)
    app.command("logs")(logs)
    app.command("watch")(watch)
    app.command("stop")(stop)
    app.command("resume")(resume)
