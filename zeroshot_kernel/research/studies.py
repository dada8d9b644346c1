"""Studies: named, separate research records, continued run after run.

A study is a folder ``.zeroshot/research/<study>/`` in the workspace (see
:mod:`zeroshot_kernel.research.records`). A run names its study in its input (``study``; by
default the task folder's name); a run on an existing study continues from its incumbent.
One study has at most one unfinished run: a second is refused before anything is created.
Records from before studies existed (files directly under ``.zeroshot/research/``) are moved
into a study folder, never rewritten or deleted.

Example::

    from zeroshot_kernel.research.studies import list_studies
    for study in list_studies("."):
        print(study.name, study.incumbent_id, study.incumbent_metric)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.research.records import RECORDS_DIR, ResearchRecords

if TYPE_CHECKING:
    from zeroshot_kernel.client import Client

MAX_STUDY_CHARS = 64
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
LEGACY_FILES = ("incumbent.json", "rounds", "candidates", "charter.md", "summary.md",
                "backlog.md")


class StudyError(ValueError):
    """A study name that cannot be used, or a study that cannot take this run now."""


def check_study_name(name: str) -> str:
    """``name`` when it is a safe folder name (letters, digits, ``.``, ``_``, ``-``; at
    most 64 characters; not starting with a dot); :class:`StudyError` otherwise."""
    if len(name) > MAX_STUDY_CHARS or not _NAME.match(name):
        shown = name if len(name) <= MAX_STUDY_CHARS else name[:MAX_STUDY_CHARS] + "…"
        raise StudyError(f"study name {shown!r}: use 1 to {MAX_STUDY_CHARS} letters, digits, "
                         "'.', '_' or '-', starting with a letter or digit")
    return name


def default_study(task: str) -> str:
    """The study a run uses unless it names one: the task folder's name."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(task).name).strip(".-_") or "study"
    return name[:MAX_STUDY_CHARS]


def study_of(run_input: Any) -> str:
    """The study named by an auto-research run's input (older runs: the default)."""
    document = run_input if isinstance(run_input, Mapping) else {}
    named = document.get("study")
    return named if isinstance(named, str) and named else default_study(
        str(document.get("task", "")))


def records_for(workspace: str | os.PathLike[str], study: str) -> ResearchRecords:
    """The study's records, after moving records from before studies into their own
    study folder (once, by renaming: nothing is rewritten)."""
    migrate_legacy(Path(workspace))
    return ResearchRecords(Path(workspace), check_study_name(study))


def migrate_legacy(workspace: Path) -> str | None:
    """Move single-study records found directly under ``.zeroshot/research/`` into
    ``.zeroshot/research/legacy/`` (or ``legacy-2``...). Returns the study it made."""
    root = workspace.resolve() / RECORDS_DIR
    if not (root / "incumbent.json").is_file():
        return None
    name, number = "legacy", 1
    while (root / name).exists():
        number += 1
        name = f"legacy-{number}"
    target = root / name
    target.mkdir(parents=True)
    for entry in LEGACY_FILES:
        if (root / entry).exists():
            os.replace(root / entry, target / entry)
    return name


def _is_research_input(run_input: Any) -> bool:
    return isinstance(run_input, Mapping) and {"task", "corrections", "reviewTitle"} <= set(
        run_input)


class StudySummary(ContractModel):
    """One line of ``zeroshot research studies``."""

    name: str
    task: str | None
    runs: int
    rounds: int
    candidates: int
    incumbent_id: str | None
    incumbent_metric: float | None


def list_studies(workspace: str | os.PathLike[str]) -> list[StudySummary]:
    """Every study of the workspace, by name."""
    root = Path(workspace).resolve() / RECORDS_DIR
    migrate_legacy(Path(workspace))
    found = []
    for folder in sorted(p for p in root.glob("*") if p.is_dir() and _NAME.match(p.name)):
        records = ResearchRecords(Path(workspace), folder.name)
        study = records.read_study()
        incumbent = records.read_incumbent()
        found.append(StudySummary(
            name=folder.name, task=study.task if study else None,
            runs=len(study.run_offsets) if study else 0,
            rounds=len(list((folder / "rounds").glob("*.json"))),
            candidates=len(list((folder / "candidates").glob("*/manifest.json"))),
            incumbent_id=incumbent.candidate_id if incumbent else None,
            incumbent_metric=incumbent.metric if incumbent else None,
        ))
    return found


@contextlib.contextmanager
def claimed(client: Client, run_input: Any) -> Iterator[None]:
    """Hold the study an auto-research run input names while the caller submits the run:
    :func:`claim_study` under a lock file, so two submitters racing on this machine cannot
    both find the study free (any other run input passes at once).

    Example::

        with claimed(client, expansion.input):
            run = client.submit(expansion.graph, input=expansion.input, ...)
    """
    if not _is_research_input(run_input):
        yield
        return
    study = check_study_name(study_of(run_input))
    locks = client.workspace / ".zeroshot" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"study-{study}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        claim_study(client, client.workspace, study, str(run_input["task"]))
        yield


def claim_study(client: Client, workspace: Path, study: str, task: str) -> None:
    """Refuse a new run on ``study`` while one of its runs is unfinished in this ledger, or
    when the study researches another task. Call before submitting: nothing is created."""
    check_study_name(study)
    recorded = ResearchRecords(workspace, study).read_study()
    if recorded is not None and Path(recorded.task).name != Path(task).name:
        raise StudyError(f"study {study!r} researches task {recorded.task!r}, not {task!r}; "
                         f"name another study with --study")
    for summary in client.runs():
        if summary.terminal is not None:
            continue
        run_input = client.ledger.admitted(summary.run_id).get("initialInput")
        if _is_research_input(run_input) and study_of(run_input) == study:
            raise StudyError(
                f"study {study!r} already has an unfinished run, {summary.run_id}; wait for "
                f"it, stop it (zeroshot stop {summary.run_id}) or resume it (zeroshot "
                f"resume {summary.run_id}). Nothing was started.")
