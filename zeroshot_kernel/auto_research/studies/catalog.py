"""Studies: named, separate research records, continued run after run.

A study is a folder ``.zeroshot/research/<study>/`` in the workspace (see
:mod:`zeroshot_kernel.auto_research.records`). A run names its study in its input (``study``; by
default the task folder's name); a run on an existing study continues from its incumbent.
One study has at most one unfinished run: a second is refused before anything is created.
Records from before studies existed (files directly under ``.zeroshot/research/``) are moved
into the study ``legacy``, never rewritten or deleted: they may mix tasks (that layout let
runs overwrite each other), so no run continues them unless it names that study.

Example::

    from zeroshot_kernel.auto_research.studies.catalog import list_studies
    for study in list_studies("."):
        print(study.name, study.incumbent_id, study.incumbent_metric)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zeroshot_kernel.auto_research.lock_files import LockUnusable, locks_folder, open_lock
from zeroshot_kernel.auto_research.records import (
    RECORDS_DIR,
    ResearchRecords,
    RoundPass,
    StudyRecord,
)
from zeroshot_kernel.auto_research.studies.run_lock import await_release, holder_file, study_holder
from zeroshot_kernel.auto_research.task import TaskError, resolve_task
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.ledger.errors import RunNotFound

if TYPE_CHECKING:
    from zeroshot_kernel.auto_research.views import ResearchView
    from zeroshot_kernel.client import Client

MAX_STUDY_CHARS = 64
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
LEGACY_STUDY = "legacy"
"""The study that holds records from before studies, and the study of runs from then."""
LEGACY_FILES = ("incumbent.json", "charter.md", "summary.md", "backlog.md")
LEGACY_FOLDERS = ("rounds", "candidates")
"""Names the layout from before studies used directly under ``.zeroshot/research/``: the
folders cannot name a study, so finding one there always means old records."""


class StudyError(InvalidInput):
    """A study name that cannot be used, or a study that cannot take this run now."""


def check_study_name(name: str) -> str:
    """``name`` when it is a safe folder name (letters, digits, ``.``, ``_``, ``-``; at
    most 64 characters; not starting with a dot; not ``rounds`` or ``candidates``);
    :class:`StudyError` otherwise."""
    if len(name) > MAX_STUDY_CHARS or not _NAME.match(name):
        shown = name if len(name) <= MAX_STUDY_CHARS else name[:MAX_STUDY_CHARS] + "…"
        raise StudyError(
            f"study name {shown!r}: use 1 to {MAX_STUDY_CHARS} letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        )
    if name in LEGACY_FOLDERS:
        raise StudyError(
            f"study name {name!r} is reserved (records from before studies used it); choose another"
        )
    return name


def default_study(task: str) -> str:
    """The study a run uses unless it names one: the task folder's name."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(task).name).strip(".-_") or "study"
    return name[:MAX_STUDY_CHARS]


def study_of(run_input: Any) -> str:
    """The study named by an auto-research run's input; a run from before studies wrote
    the records that :func:`migrate_legacy` keeps in ``legacy``."""
    named = run_input.get("study") if isinstance(run_input, Mapping) else None
    return named if isinstance(named, str) and named else LEGACY_STUDY


def records_for(workspace: str | os.PathLike[str], study: str) -> ResearchRecords:
    """The study's records, after moving records from before studies into their own
    study folder (once, by renaming: nothing is rewritten)."""
    migrate_legacy(Path(workspace))
    return ResearchRecords(Path(workspace), check_study_name(study))


def migrate_legacy(workspace: Path) -> str | None:
    """Move single-study records found directly under ``.zeroshot/research/`` into
    ``.zeroshot/research/legacy/`` (or ``legacy-2``... when that exists), by renaming each
    entry under a lock, so racing processes move them once. Returns the study it made."""
    root = workspace.resolve() / RECORDS_DIR
    if not _legacy_entries(root):
        return None
    with _locked(workspace, "research-records"):
        entries = _legacy_entries(root)  # again: another process may have moved them
        if not entries:
            return None
        name, number = LEGACY_STUDY, 1
        while os.path.lexists(root / name):
            number += 1
            name = f"{LEGACY_STUDY}-{number}"
        (root / name).mkdir()
        for entry in entries:
            os.replace(root / entry, root / name / entry)
    return name


def _legacy_entries(root: Path) -> list[str]:
    return [
        *(e for e in LEGACY_FILES if (root / e).is_file()),
        *(e for e in LEGACY_FOLDERS if (root / e).is_dir()),
    ]


@contextlib.contextmanager
def _locked(workspace: Path, name: str) -> Iterator[None]:
    """Hold ``.zeroshot/locks/<name>.lock`` (an ``fcntl`` lock: the kernel releases it
    when its holder dies, so a crashed holder never blocks anyone)."""
    with open_lock(locks_folder(workspace) / f"{name}.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _finished_here(client: Client, run_id: str) -> bool:
    """``run_id`` is a run of this ledger that has ended (its controller is closing)."""
    try:
        return client.run(run_id).terminal is not None
    except RunNotFound:
        return False


def _identity_problem(recorded: StudyRecord, workspace: Path, task: str) -> str | None:
    """Why ``task`` cannot continue the study ``recorded`` describes; a task that cannot be
    loaded is compared by its folder name only (the run itself says what is wrong)."""
    try:
        spec = resolve_task(task, workspace).spec
    except TaskError:
        return recorded.identity_problem(task, None)
    return recorded.identity_problem(task, spec)


def _is_research_input(run_input: Any) -> bool:
    return isinstance(run_input, Mapping) and {"task", "corrections", "reviewTitle"} <= set(
        run_input
    )


class StudySummary(ContractModel):
    """One line of ``zeroshot research studies``."""

    name: str
    task: str | None
    """The task folder the study's runs researched (``None``: records from before studies)."""
    runs: int
    rounds: int
    """Reviewed rounds (the baseline's measurement is not one)."""
    candidates: int
    incumbent_id: str | None
    incumbent_metric: float | None
    problem: str | None = None
    """Why the study's task or incumbent could not be read (a damaged record file)."""


def list_studies(workspace: str | os.PathLike[str]) -> list[StudySummary]:
    """Every study of the workspace, by name."""
    root = Path(workspace).resolve() / RECORDS_DIR
    migrate_legacy(Path(workspace))
    folders = sorted(
        p
        for p in root.glob("*")
        if p.is_dir()
        and not p.is_symlink()
        and _NAME.match(p.name)
        and p.name not in LEGACY_FOLDERS
    )
    return [_summary(ResearchRecords(Path(workspace), folder.name)) for folder in folders]


def _summary(records: ResearchRecords) -> StudySummary:
    problem = None
    try:
        study, incumbent = records.read_study(), records.read_incumbent()
    except (OSError, ValueError) as damaged:
        study = incumbent = None
        problem = f"unreadable records: {type(damaged).__name__}"
    return StudySummary(
        name=records.study,
        task=study.task if study else None,
        runs=len(study.run_offsets) if study else 0,
        rounds=sum(  # reviewed rounds: the baseline's round 0 is not one (as the views count)
            1 for path in (records.root / "rounds").glob("*.json") if path.stem != "000"
        ),
        candidates=len(list((records.root / "candidates").glob("*/manifest.json"))),
        incumbent_id=incumbent.candidate_id if incumbent else None,
        incumbent_metric=incumbent.metric if incumbent else None,
        problem=problem,
    )


@contextlib.contextmanager
def claimed(client: Client, run_input: Any) -> Iterator[None]:
    """Hold the study an auto-research run input names while the caller records the run:
    :func:`claim_study` under a lock file, so two submitters racing on this machine cannot
    both find the study free (any other run input passes at once). ``Client.submit`` holds
    it around creating the run; do not nest it around ``submit`` (the lock is not
    re-entrant).

    The ledger, not the lock, says whether a study is busy: the lock lives only while a
    submission is recorded and the kernel drops it if its holder dies; a run whose
    controller died stays unfinished (and refuses new runs) until it is resumed or stopped.
    """
    if not _is_research_input(run_input):
        yield
        return
    study = check_study_name(study_of(run_input))
    try:
        with _locked(client.workspace, f"study-{study}"):
            claim_study(client, client.workspace, study, str(run_input["task"]))
            yield
    except LockUnusable as problem:
        raise StudyError(f"{problem}. Nothing was started.") from None


class Admissions(Protocol):
    """Where a run's admitted submission is read: a ledger or a client."""

    def admitted(self, run_id: str) -> dict[str, Any]: ...


def study_of_run(reader: Admissions, run_id: str) -> str:
    """The study an auto-research run records into (``RunNotFound`` for an unknown run)."""
    run_input = reader.admitted(run_id).get("initialInput")
    if not _is_research_input(run_input):
        raise StudyError(f"run {run_id} is not an auto-research run")
    return study_of(run_input)


def research_runs(client: Client) -> list[str]:
    """The ids of the ledger's auto-research runs, newest first: a report or a view that
    is given no run shows the newest of these, whatever else ran after it."""
    newest_first = sorted(client.runs(), key=lambda run: run.created_at, reverse=True)
    return [
        run.run_id
        for run in newest_first
        if _is_research_input(client.admitted(run.run_id).get("initialInput"))
    ]


def study_round_offset(reader: Admissions, workspace: Path, run_id: str) -> int:
    """How many of its study's rounds were recorded before ``run_id`` (0 for a run that
    is not auto-research); read-only."""
    try:
        study = study_of_run(reader, run_id)
        return ResearchRecords(workspace, check_study_name(study)).recorded_offset(run_id)
    except (StudyError, RunNotFound):
        return 0


def candidates_in_flight(
    reader: Admissions, workspace: Path, run_id: str, round_number: int
) -> list[str]:
    """The approaches of ``run_id``'s candidates of ``round_number`` being measured now
    (their rows begun, not finished: several with ``--parallel``); read-only, ``[]`` for
    none, or a run that is not auto-research."""
    try:
        study = check_study_name(study_of_run(reader, run_id))
        record = ResearchRecords(workspace, study).read_round(round_number)
    except (StudyError, RunNotFound, ValueError):
        return []
    return in_flight(record.passes if record else [], run_id)


def in_flight(passes: Sequence[RoundPass], run_id: str) -> list[str]:
    """The approaches of ``run_id``'s begun, unfinished passes among ``passes``."""
    return [
        p.change.approach if p.change else "a change"
        for p in passes
        if p.status == "started" and p.pass_id.startswith(f"{run_id}/")
    ]


def in_flight_text(approaches: Sequence[str]) -> str:
    """`` · measuring 3 candidates: a, b, c`` (``""`` for fewer than two)."""
    if len(approaches) < 2:
        return ""
    shown = ", ".join(a[:40] for a in approaches[:4])
    more = f" and {len(approaches) - 4} more" if len(approaches) > 4 else ""
    return f" · measuring {len(approaches)} candidates: {shown}{more}"


def round_in_progress(view: ResearchView, offset: int) -> int:
    """The study-wide number of the round ``view``'s run is working on (rounds are
    numbered across the study; the view counts only this run's, after ``offset``)."""
    if view.rounds:
        return view.rounds[-1].round + (view.active_round - len(view.rounds))
    return offset + view.active_round


def claim_study(client: Client, workspace: Path, study: str, task: str) -> None:
    """Refuse a new run on ``study`` while one of its runs is unfinished in this ledger,
    while a live controller holds it (:mod:`.run_lock`: a run of any ledger), or when the
    study researches another task. Call before submitting: nothing is created."""
    check_study_name(study)
    try:
        recorded = ResearchRecords(workspace, study).read_study()
    except (OSError, ValueError):
        raise StudyError(
            f"study {study!r} has a damaged study.json; name another study "
            "with --study. Nothing was started."
        ) from None
    problem = None if recorded is None else _identity_problem(recorded, workspace, task)
    if problem is not None:
        raise StudyError(f"study {study!r} {problem}; name another study with --study")
    for summary in client.runs():
        if summary.terminal is not None:
            continue
        run_input = client.admitted(summary.run_id).get("initialInput")
        if _is_research_input(run_input) and study_of(run_input) == study:
            raise StudyError(
                f"study {study!r} already has an unfinished run, {summary.run_id}; wait for "
                f"it, stop it (zeroshot stop {summary.run_id}) or resume it (zeroshot "
                f"resume {summary.run_id}). Nothing was started."
            )
    holder = study_holder(workspace, study)
    if holder is not None and _finished_here(client, holder):  # its controller is closing
        holder = await_release(workspace, study)
    if holder is not None:
        raise StudyError(
            f"study {study!r} is being researched by run {holder}, whose controller holds "
            f"it (the run may be recorded in another ledger; see {holder_file(workspace, study)}"
            "); wait for it or name another study with --study. Nothing was started."
        )
