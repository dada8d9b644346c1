"""A candidate's bytes: store, hash, verify, restore and rebuild.

A candidate's identity is its content hash: the SHA-256 of the sorted ``<sha256>  <path>``
lines of its files (the ``sha256sum`` format), so two candidates with the same bytes have
the same hash wherever they were made. Byte-code caches are never part of a candidate.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.records import CandidateManifest, ResearchRecords
from zeroshot_kernel.auto_research.task import Params, ResearchTask
from zeroshot_kernel.contract.model import ContractModel

_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


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


def verify_candidate(records: ResearchRecords, candidate_id: str) -> BytesCheck:
    """Check the stored source of ``candidate_id`` against its manifest."""
    manifest = records.read_manifest(candidate_id)
    if manifest is None:
        return BytesCheck(candidate_id=candidate_id, ok=False, problems=["no manifest"])
    return verify_tree(records.source_dir(candidate_id), manifest)


def restore_candidate(records: ResearchRecords, candidate_id: str, dest: Path) -> BytesCheck:
    """Copy the stored source of ``candidate_id`` into ``dest`` (new or empty), then verify it."""
    manifest = records.read_manifest(candidate_id)
    if manifest is None:
        return BytesCheck(candidate_id=candidate_id, ok=False, problems=["no manifest"])
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"restore target {dest} is not empty")
    source = records.source_dir(candidate_id)
    if source.is_dir():
        shutil.copytree(source, dest, ignore=_IGNORED, dirs_exist_ok=True)
    else:
        dest.mkdir(parents=True, exist_ok=True)
    return verify_tree(dest, manifest)


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
