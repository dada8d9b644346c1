"""A candidate's bytes: store, hash, verify, restore and rebuild.

A candidate's identity is its content hash: the SHA-256 of the sorted ``<sha256>  <path>``
lines of its files (the ``sha256sum`` format), so two candidates with the same bytes have
the same hash wherever they were made. Byte-code caches are never part of a candidate.

Recorded bytes are read by :func:`read_candidate` only: without following a link, regular
files only, within :data:`MAX_CANDIDATE_BYTES`, each file named by the manifest checked to
stay inside the candidate, and all of them hashed against the manifest before any caller
writes a byte of them anywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from zeroshot_kernel.auto_research.records import CandidateManifest, ResearchRecords
from zeroshot_kernel.auto_research.task import Params, ResearchTask
from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.safe_files import (
    FileRefused,
    list_tree,
    open_folder_at,
    opened_below,
    read_open,
    relative_parts,
    write_new_at,
)

_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")
MAX_CANDIDATE_FILES = 10_000
MAX_CANDIDATE_BYTES = 256 * 1024 * 1024
"""All the recorded bytes of one candidate read together (a task's source is far smaller)."""


class BytesCheck(ContractModel):
    """Whether a directory holds exactly a candidate's recorded bytes, and what differs."""

    candidate_id: str
    ok: bool
    problems: list[str]


def tree_hashes(directory: Path) -> dict[str, str]:
    """Relative POSIX path -> SHA-256 of every file under ``directory`` (caches excluded)."""
    hashes = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if "__pycache__" in relative.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        hashes[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def content_sha256(files: Mapping[str, str]) -> str:
    lines = "".join(f"{digest}  {path}\n" for path, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def store_candidate(
    records: ResearchRecords,
    source: Path,
    *,
    candidate_id: str,
    parent_id: str,
    round_number: int,
    params: Params,
) -> CandidateManifest:
    """Copy ``source`` into the records as ``candidate_id`` and write its manifest."""
    target = records.source_dir(candidate_id)
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, ignore=_IGNORED)
    files = tree_hashes(target)
    manifest = CandidateManifest(
        candidate_id=candidate_id,
        parent_id=parent_id,
        round=round_number,
        params=params,
        files=files,
        content_sha256=content_sha256(files),
    )
    records.write_manifest(manifest)
    return manifest


def verify_tree(directory: Path, manifest: CandidateManifest) -> BytesCheck:
    """Compare ``directory`` with the manifest file by file."""
    found = tree_hashes(directory) if directory.is_dir() else {}
    problems = [f"missing {path}" for path in sorted(manifest.files.keys() - found.keys())]
    problems += [
        f"changed {path}"
        for path in sorted(manifest.files.keys() & found.keys())
        if manifest.files[path] != found[path]
    ]
    problems += [f"unexpected {path}" for path in sorted(found.keys() - manifest.files.keys())]
    if content_sha256(manifest.files) != manifest.content_sha256:
        problems.append("manifest content hash does not match its file list")
    return BytesCheck(candidate_id=manifest.candidate_id, ok=not problems, problems=problems)


@dataclass(frozen=True)
class RecordedSource:
    """A candidate's recorded bytes as read from the records, and what is wrong with them;
    ``files`` is empty unless every byte matched the manifest."""

    candidate_id: str
    manifest: CandidateManifest | None
    problems: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    executable: frozenset[str] = frozenset()
    """The files recorded with an execute permission (a script), restored with it."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def check(self) -> BytesCheck:
        return BytesCheck(candidate_id=self.candidate_id, ok=self.ok, problems=self.problems)


def read_candidate(records: ResearchRecords, candidate_id: str) -> RecordedSource:
    """The recorded source of ``candidate_id``, read and checked against its manifest (a
    damaged manifest raises ``ValueError``, as reading any record does)."""
    manifest = records.read_manifest(candidate_id)
    if manifest is None:
        return RecordedSource(candidate_id, None, ["no manifest"])
    problems = _manifest_problems(manifest, candidate_id)
    if problems:
        return RecordedSource(candidate_id, manifest, problems)
    source = PurePosixPath(records.source_dir(candidate_id).relative_to(records.workspace))
    executable: set[str] = set()
    try:
        with opened_below(records.workspace, source, folder=True) as folder:
            files, problems = _read_files(folder, manifest, executable)
    except FileNotFoundError:
        files, problems = {}, [f"missing {path}" for path in sorted(manifest.files)]
    except FileRefused as refused:
        files, problems = {}, [str(refused)]
    if problems:
        return RecordedSource(candidate_id, manifest, problems)
    return RecordedSource(candidate_id, manifest, [], files, frozenset(executable))


def _manifest_problems(manifest: CandidateManifest, candidate_id: str) -> list[str]:
    if manifest.candidate_id != candidate_id:
        return [f"its manifest names another candidate ({manifest.candidate_id[:80]!r})"]
    if len(manifest.files) > MAX_CANDIDATE_FILES:
        return [f"its manifest lists more than {MAX_CANDIDATE_FILES:,} files"]
    problems = []
    for path in sorted(manifest.files):
        try:
            relative_parts(path)
        except FileRefused as refused:
            problems.append(f"its manifest lists {refused}")
    if content_sha256(manifest.files) != manifest.content_sha256:
        problems.append("manifest content hash does not match its file list")
    return problems


def _read_files(
    folder: int, manifest: CandidateManifest, executable: set[str]
) -> tuple[dict[str, bytes], list[str]]:
    """Every file the manifest lists, hashed, and anything else found in ``folder``."""
    regular, others = list_tree(folder, limit=MAX_CANDIDATE_FILES * 2)
    problems = [f"{path} is not a regular file" for path in others if not _cached(path)]
    problems += [
        f"unexpected {path}" for path in regular if path not in manifest.files and not _cached(path)
    ]
    files: dict[str, bytes] = {}
    budget = MAX_CANDIDATE_BYTES
    for path in sorted(manifest.files):
        if path not in regular:
            problems.append(f"missing {path}")
            continue
        with opened_below(folder, PurePosixPath(path)) as handle:
            data = read_open(handle, limit=budget, shown=f"the candidate's files ({path})")
            if os.fstat(handle).st_mode & 0o111:
                executable.add(path)
        budget -= len(data)
        if hashlib.sha256(data).hexdigest() != manifest.files[path]:
            problems.append(f"changed {path}")
        files[path] = data
    return files, problems


def _cached(path: str) -> bool:
    return "__pycache__" in path.split("/") or path.endswith(".pyc")


def verify_candidate(records: ResearchRecords, candidate_id: str) -> BytesCheck:
    """Check the stored source of ``candidate_id`` against its manifest."""
    return read_candidate(records, candidate_id).check()


def write_files(folder: int, recorded: RecordedSource) -> None:
    """Create the verified files of ``recorded`` in the folder ``folder``, which holds
    none of them: every part is created here, never opened through a link."""
    for path, data in sorted(recorded.files.items()):
        *parents, name = relative_parts(path)
        current = os.dup(folder)
        try:
            for part in parents:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=current)
                below = open_folder_at(current, part, path)
                os.close(current)
                current = below
            write_new_at(current, name, data, mode=0o755 if path in recorded.executable else 0o644)
        finally:
            os.close(current)


def restore_candidate(records: ResearchRecords, candidate_id: str, dest: Path) -> BytesCheck:
    """Write the recorded source of ``candidate_id`` into ``dest`` (new or empty) once its
    bytes matched the manifest; nothing is written when they do not."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"restore target {dest} is not empty")
    recorded = read_candidate(records, candidate_id)
    if recorded.ok:
        dest.mkdir(parents=True, exist_ok=True)
        with opened_below(dest, folder=True) as folder:
            write_files(folder, recorded)
    return recorded.check()


def write_params(directory: Path, task: ResearchTask, params: Params) -> None:
    """Set the search-space parameters in the candidate's params file, keeping other keys
    (a code task has no parameters, and may have no params file)."""
    if not params:
        return
    path = directory / task.spec.params_file
    current: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    current.update(params)
    path.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def build_candidate(task: ResearchTask, params: Params | None, dest: Path) -> None:
    """The task's starting candidate with ``params`` applied (``None``: unchanged)."""
    shutil.copytree(task.candidate_dir, dest, ignore=_IGNORED)
    if params is not None:
        write_params(dest, task, params)


def repair_candidate(records: ResearchRecords, task: ResearchTask, candidate_id: str) -> BytesCheck:
    """Rebuild a candidate whose stored bytes are damaged from the task and its params.

    Works for candidates that differ from the starting one only in the params file (all the
    embedded agents make); the rebuilt bytes replace the stored ones only when they match
    the manifest, so a repair can never change what a candidate is.
    """
    manifest = records.read_manifest(candidate_id)
    if manifest is None:
        return BytesCheck(candidate_id=candidate_id, ok=False, problems=["no manifest"])
    with tempfile.TemporaryDirectory(prefix="zeroshot-rebuild-") as scratch:
        rebuilt = Path(scratch) / "source"
        build_candidate(task, manifest.params if manifest.parent_id else None, rebuilt)
        check = verify_tree(rebuilt, manifest)
        if not check.ok:
            return BytesCheck(
                candidate_id=candidate_id,
                ok=False,
                problems=[f"cannot rebuild: {p}" for p in check.problems],
            )
        target = records.source_dir(candidate_id)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(rebuilt, target)
    return check
