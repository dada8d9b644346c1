"""``zeroshot research run | show | studies | restore | export``: auto-research on a task
folder, its rounds, its studies and their export."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from zeroshot_kernel.auto_research.launch import Research, launch_research, research_options
from zeroshot_kernel.console.options import (
    LedgerOption,
    SandboxOption,
    TargetOption,
    open_client,
)
from zeroshot_kernel.console.output import (
    EXIT_OK,
    EXIT_REJECTED,
    camel_keys,
    fail_usage,
    print_json,
    printable,
)
from zeroshot_kernel.sandbox import sandbox_mode

if TYPE_CHECKING:
    from zeroshot_kernel.auto_research.task import TaskSpec
    from zeroshot_kernel.auto_research.views import ResearchView, RoundView
    from zeroshot_kernel.client import Run
    from zeroshot_kernel.console.follow import Shown

research_app = typer.Typer(
    help="Auto-research: improve a candidate in reviewed rounds.", no_args_is_help=True
)


@research_app.command("tasks")
def tasks() -> None:
    """List the bundled research tasks (use a name wherever a task folder is asked for).

    Example: zeroshot research tasks
    """
    from zeroshot_kernel.auto_research.task import BUNDLED_TASKS, bundled_tasks, load_task

    for name in bundled_tasks():
        spec = load_task(BUNDLED_TASKS / name).spec
        changes = (
            f"{len(spec.search_space)} parameters"
            if spec.search_space
            else f"code task (edits {', '.join(spec.editable)})"
        )
        typer.echo(
            f"{name:<12}  {spec.metric} ({spec.direction}), "
            f"{spec.budget_seconds:g} s budget, {changes}{scoring_label(spec)}"
        )


def scoring_label(spec: TaskSpec) -> str:
    """How a task's metric is produced, when it is not the task author's own experiment:
    ``, scored by scorer/`` or ``, self-scored``."""
    from zeroshot_kernel.auto_research.task import SCORER_DIR

    if spec.score is not None:
        return f", scored by {SCORER_DIR}/"
    return ", self-scored" if spec.scored_by_candidate else ""


@research_app.command("run")
@research_options
def run(
    task: Annotated[
        str,
        typer.Argument(help="Research task folder (holds task.yaml), or a bundled task's name."),
    ],
    *,
    research: Research,
    detach: Annotated[bool, typer.Option("--detach", help="Return at once.")] = False,
    sandbox: SandboxOption = None,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Run auto-research on TASK, printing each reviewed round as it closes.

    A run on an existing study continues from its incumbent; a study with an unfinished
    run is refused before anything starts.

    \b
    Examples:
      zeroshot research run rosenbrock --iterations 5 --study rosenbrock-long
      zeroshot research run branin --harness openai --base-url http://127.0.0.1:8080/v1 \
          --model local
      zeroshot research run my-gpu-task --dask tcp://scheduler:8786 --parallel 4
    """
    started = launch_research(
        task, research, sandbox=sandbox_mode(sandbox), ledger=ledger, target=target
    )
    if detach:
        typer.echo(
            f"see its rounds with: zeroshot research show {started.id}; "
            f"follow its events with: zeroshot watch {started.id}"
        )
        raise typer.Exit(EXIT_OK)
    _follow(started)


def _follow(run_handle: Run) -> None:
    """Print each reviewed round as it closes, then the run's end; Ctrl-C detaches at once
    (exit 130, see :func:`~zeroshot_kernel.console.follow.follow`)."""
    from zeroshot_kernel.console.follow import follow

    follow(
        _round_lines(run_handle),
        lambda _: (
            f"\ndetached; {run_handle.id} keeps running. "
            f"See it with: zeroshot research show {run_handle.id}"
        ),
    )


def _round_lines(run_handle: Run) -> Iterator[Shown]:
    """Read on :func:`_follow`'s reading thread; ends by raising ``typer.Exit`` with the
    run's exit status."""
    from zeroshot_kernel.auto_research.views import ResearchViewBuilder
    from zeroshot_kernel.console.event_lines import describe_result
    from zeroshot_kernel.console.follow import ControllerWatch, failure_lines
    from zeroshot_kernel.ledger.events import SucceededResult

    builder = ResearchViewBuilder()
    watch = ControllerWatch(run_handle)
    shown = 0
    cursor = None
    while True:
        snapshot, tail = run_handle.client.snapshot_and_tail(run_handle.id, cursor)
        cursor = snapshot.cursor
        view = builder.feed(event for _, event in tail).view()
        for round_view in view.rounds[shown:]:
            yield round_line(round_view), None
        shown = len(view.rounds)
        if view.terminal is not None:
            ok = isinstance(view.terminal, SucceededResult)
            ending = [f"finished: {describe_result(view.terminal)}", *_summary_lines(view)]
            ending += [] if ok else failure_lines(run_handle)
            yield from ((line, None) for line in ending)
            raise typer.Exit(EXIT_OK if ok else EXIT_REJECTED)
        watch.check()
        time.sleep(0.3)


def round_line(r: RoundView) -> str:
    from zeroshot_kernel.auto_research.experiment import status_words
    from zeroshot_kernel.auto_research.round_words import (
        REMEASURED,
        approach_words,
        is_remeasure,
        reconsidered_words,
    )

    metric = (
        f"{r.metric:.6g}"
        if r.metric is not None
        else status_words(r.experiment_status)
        if r.measure_status == "measured"
        else r.measure_status.replace("_", " ")
    )
    remeasure = is_remeasure(r.approach, r.candidate_id, r.parent_id)
    change = "ADOPTED" if r.adopted else REMEASURED if remeasure else "kept incumbent"
    approach = approach_words(r.approach, r.candidate_id, r.parent_id)
    extra = f", {r.passes} passes" if r.passes > 1 else ""
    reconsider = f"; {reconsidered_words(r.parent_id)}" if r.reconsidered else ""
    return (
        f"round {r.round:>3}  {r.candidate_id:<8} {metric:>12}  {change:<15} "
        f"{approach[:40]:<40} reviewer {r.verdict}{extra}{reconsider}{_gate(r)}"
    )


def _gate(r: RoundView) -> str:
    """The gate's numbers of a raced round: ``; gain 23.3 / floor 9.01, 3/9 seeds, better``."""
    if r.gate_decision is None:
        return ""
    if not r.seeds:  # crashed, hung or printed no metric first: nothing was compared
        return f"; no paired measurement, {r.gate_decision.replace('_', ' ')}"
    budget = f"/{r.max_seeds}" if r.max_seeds else ""
    return (
        f"; gain {r.gain:.3g} / floor {r.noise_floor:.3g}, {r.seeds}{budget} seeds, "
        f"{r.gate_decision.replace('_', ' ')}"
    )


SHOWN_DIFF_LINES = 30


def diff_lines(diff: str) -> list[str]:
    """A round's change against its parent, indented under its line; long diffs are cut
    (``--json`` has them whole)."""
    lines = [printable(line) for line in diff.splitlines()]
    shown = [f"    {line}" for line in lines[:SHOWN_DIFF_LINES]]
    if len(lines) > SHOWN_DIFF_LINES:
        shown.append(f"    ... {len(lines) - SHOWN_DIFF_LINES} more line(s) (--json has all)")
    return shown


def _summary_lines(view: ResearchView) -> list[str]:
    lines = list(view.notes())
    if view.incumbent is not None:
        metric = "n/a" if view.incumbent.metric is None else f"{view.incumbent.metric:.6g}"
        origin = (
            f"adopted in round {view.incumbent.round}"
            if view.incumbent.round
            else "the incumbent this run started from"
        )
        lines.append(
            f"incumbent: {view.incumbent.candidate_id} (metric {metric}, {origin}); "
            f"plateau: {view.plateau} round(s)"
        )
    return lines


@research_app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="Run id of an auto-research run.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Show an auto-research run's rounds, incumbent and plateau, from the ledger alone."""
    from dataclasses import asdict

    from zeroshot_kernel.auto_research.studies.catalog import (
        StudyError,
        candidates_in_flight,
        in_flight_text,
        round_in_progress,
        study_of_run,
        study_round_offset,
    )
    from zeroshot_kernel.auto_research.views import load_research_view
    from zeroshot_kernel.ledger import RunNotFound
    from zeroshot_kernel.ledger.failure import explain_failure

    client = open_client(ledger, target)
    try:
        study_of_run(client, run_id)  # another kind of run has no rounds to show
        view = load_research_view(client, run_id)
    except RunNotFound:
        fail_usage(f"no run {run_id} in ledger {client.display_url}")
    except StudyError as other:
        fail_usage(f"{other}; see it with: zeroshot status {run_id}")
    cause = explain_failure(event for _, event in client.run(run_id).events())
    active = round_in_progress(view, study_round_offset(client, client.workspace, run_id))
    if as_json:
        document = camel_keys(asdict(view))
        document["terminal"] = view.terminal.to_wire() if view.terminal else None
        document["failure"] = cause.to_wire() if cause else None
        document["inFlight"] = (
            [] if view.terminal else candidates_in_flight(client, client.workspace, run_id, active)
        )
        print_json(json.loads(json.dumps(document, default=str)))
        return
    typer.echo(
        f"{run_id}: {len(view.rounds)} reviewed round(s)"
        + (
            ""
            if view.terminal
            else f", round {active} in progress"
            + in_flight_text(candidates_in_flight(client, client.workspace, run_id, active))
        )
    )
    for round_view in view.rounds:
        typer.echo(round_line(round_view))
        for line in diff_lines(round_view.diff):
            typer.echo(line)
    for line in _summary_lines(view):
        typer.echo(line)
    if cause is not None:
        for line in cause.lines():
            typer.echo(printable(line))


@research_app.command("studies")
def studies(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the workspace's studies: task, runs, rounds, candidates, incumbent and metric.

    Example: zeroshot research studies --json
    """
    from zeroshot_kernel.auto_research.studies.catalog import list_studies
    from zeroshot_kernel.workspace import find_workspace

    found = list_studies(find_workspace())
    if as_json:
        print_json([study.to_wire() for study in found])
        return
    if not found:
        typer.echo("no studies yet (zeroshot research run TASK starts one)")
    for study in found:
        metric = "n/a" if study.incumbent_metric is None else f"{study.incumbent_metric:.6g}"
        task = Path(study.task).name if study.task else "?"
        typer.echo(
            printable(
                f"{study.name:<20} task {task:<16} {study.runs} run(s), {study.rounds} round(s), "
                f"{study.candidates} candidate(s); incumbent {study.incumbent_id or '-'} ({metric})"
                + (f"; {study.problem}" if study.problem else "")
            )
        )


@research_app.command("restore")
def restore(
    study_or_run: Annotated[
        str, typer.Argument(help="A study name, or an auto-research run id (its study is used).")
    ],
    candidate: Annotated[str, typer.Argument(help="Candidate id, e.g. c004.")],
    directory: Annotated[Path, typer.Argument(help="Where to write the candidate's source.")],
    force: Annotated[
        bool, typer.Option("--force", help="Write into DIRECTORY even if it is not empty.")
    ] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Write a candidate's recorded source into DIRECTORY, verified against its content hash.

    Example: zeroshot research restore rosenbrock c004 ./best
    """
    from zeroshot_kernel.auto_research.records import RECORDS_DIR
    from zeroshot_kernel.auto_research.restore import RestoreError, restore_candidate_source
    from zeroshot_kernel.auto_research.studies.catalog import StudyError, study_of_run
    from zeroshot_kernel.workspace import find_workspace

    workspace = find_workspace()
    study = study_or_run
    if study_or_run.startswith("run-") and not (workspace / RECORDS_DIR / study).is_dir():
        from zeroshot_kernel.ledger import RunNotFound

        client = open_client(ledger, target)
        try:
            study = study_of_run(client, study_or_run)
        except RunNotFound:
            fail_usage(f"no run {study_or_run} in ledger {client.display_url}")
        except StudyError as problem:
            fail_usage(str(problem))
    try:
        written = restore_candidate_source(workspace, study, candidate, directory, force=force)
    except RestoreError as problem:
        fail_usage(str(problem))
    replaced = (
        f"; replaced the symbolic link(s) {', '.join(written.replaced_links)}"
        if written.replaced_links
        else ""
    )
    typer.echo(
        printable(
            f"restored {candidate} of study {study} into {directory} ({written.files} "
            f"file(s), content sha256 {written.content_sha256[:12]}…{replaced})"
        )
    )


@research_app.command("export")
def export(
    study: Annotated[
        str, typer.Argument(help="The study to export (see: zeroshot research studies).")
    ],
    csv_file: Annotated[
        Path | None, typer.Option("--csv", help="Write CSV to this file ('-': standard output).")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Write JSON (camelCase keys) to standard output, or to --output."
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="With --json: the file to write instead of standard output."
        ),
    ] = None,
    candidates: Annotated[
        bool, typer.Option("--candidates", help="One row per candidate instead of one per round.")
    ] = False,
    ledger: LedgerOption = None,
    target: TargetOption = None,
) -> None:
    """Export a study's rounds (or, with --candidates, its candidates) as CSV or JSON.

    CSV puts each parameter in a column of its own (param.NAME); JSON keeps them in
    "params". The ledger adds each round's run, harness, model and reviewer verdict.

    \b
    Examples:
      zeroshot research export branin --csv branin-rounds.csv
      zeroshot research export branin --candidates --json -o branin-candidates.json
    """
    from zeroshot_kernel.auto_research.studies.catalog import StudyError
    from zeroshot_kernel.auto_research.studies.export import Study
    from zeroshot_kernel.workspace import find_workspace

    if (csv_file is None) == (not as_json):
        fail_usage("give one of --csv FILE and --json")
    if output is not None and not as_json:
        fail_usage("--output goes with --json (--csv names its own file)")
    client = open_client(ledger, target)
    try:
        opened = Study.open(find_workspace(), study, client=client)
        kind: Literal["rounds", "candidates"] = "candidates" if candidates else "rounds"
        text = (
            opened.csv_text(kind)
            if csv_file is not None
            else json.dumps(opened.json_rows(kind), indent=2, ensure_ascii=False) + "\n"
        )
    except (StudyError, OSError, ValueError) as problem:
        fail_usage(str(problem))
    destination = csv_file if csv_file is not None else output
    if destination is None or str(destination) == "-":
        typer.echo(printable(text), nl=False)
        return
    from zeroshot_kernel.safe_files import FileRefused, write_atomic

    try:
        write_atomic(destination, text.encode("utf-8"))
    except FileRefused as problem:
        fail_usage(str(problem))
    except OSError as problem:
        fail_usage(f"cannot write {destination}: {problem.strerror or problem}")
    rows = len(opened.rows(kind))
    typer.echo(printable(f"wrote {rows} {kind} of study {study} to {destination}"), err=True)
