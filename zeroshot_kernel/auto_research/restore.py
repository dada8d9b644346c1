"""Restoring a study's candidate: its recorded source, written out only after it was
verified against the content hash in its manifest.

Example::

    from zeroshot_kernel.auto_research import restore_candidate_source
    restore_candidate_source(".", "rosenbrock", "c004", "best")
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zeroshot_kernel.auto_research.candidates import restore_candidate, verify_candidate
from zeroshot_kernel.auto_research.records import CandidateManifest, ResearchRecords
from zeroshot_kernel.auto_research.studies import StudyError, records_for
from zeroshot_kernel.exceptions import InvalidInput

_CANDIDATE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class RestoreError(InvalidInput):
    """The candidate cannot be restored as asked; nothing was written."""


@dataclass(frozen=True)
class Restored:
    files: int
    content_sha256: str


def restore_candidate_source(
    workspace: str | os.PathLike[str],
    study: str,
    candidate: str,
    directory: str | os.PathLike[str],
    *,
    force: bool = False,
) -> Restored:
    """Write ``candidate`` of ``study`` into ``directory``: refused (nothing written) when
    the study or candidate is unknown, when its recorded bytes no longer match their
    content hash, or when ``directory`` holds files (unless ``force``, which replaces
    same-named files: a symlink among them is replaced, never followed)."""
    try:
        records = records_for(workspace, study)
    except StudyError as bad:
        raise RestoreError(str(bad)) from None
    if not records.root.is_dir():
        raise RestoreError(f"no study {study!r} in {Path(workspace).resolve()}")
    try:
        manifest = records.read_manifest(candidate) if _CANDIDATE.match(candidate) else None
    except (OSError, ValueError):
        raise RestoreError(
            f"the manifest of {candidate} in study {study!r} is damaged; nothing was written"
        ) from None
    if manifest is None:
        raise RestoreError(f"study {study!r} has no candidate {candidate!r}")
    stored = verify_candidate(records, candidate)
    if not stored.ok:
        raise RestoreError(
            f"the recorded source of {candidate} does not match its content hash "
            f"({'; '.join(stored.problems[:3])}); nothing was written"
        )
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise RestoreError(f"{target} is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise RestoreError(f"{target} is not empty; use --force (force=True) to write into it")
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target, prefix=".restore-") as scratch:
            return _write(records, manifest, Path(scratch), target)
    except OSError as blocked:
        raise RestoreError(f"cannot write into {target}: {blocked.strerror or blocked}") from None


def _write(
    records: ResearchRecords, manifest: CandidateManifest, scratch: Path, target: Path
) -> Restored:
    """Restore into ``scratch`` (inside ``target``), verify, then move each file in: a
    rename from beside it, which replaces a symlink in the way instead of following it."""
    copied = restore_candidate(records, manifest.candidate_id, scratch / "source")
    if not copied.ok:
        raise RestoreError(
            f"the copy of {manifest.candidate_id} did not verify "
            f"({'; '.join(copied.problems[:3])}); nothing was written"
        )
    inside = target.resolve()
    for path in sorted(manifest.files):
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        if not destination.parent.resolve().is_relative_to(inside):
            raise RestoreError(
                f"{destination.parent} leads outside {target} (a symlink); "
                "restore into an empty folder"
            )
        os.replace(scratch / "source" / path, destination)
    return Restored(files=len(manifest.files), content_sha256=manifest.content_sha256)
