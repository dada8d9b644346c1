"""Restoring a study's candidate: its recorded source, written out only after it was
verified against the content hash in its manifest.

Every recorded byte is read without following a link and hashed before anything is
written (:func:`~zeroshot_kernel.auto_research.candidates.read_candidate`). The files are
then written into a temporary folder inside the target and renamed into place. With
``force``, a same-named file is replaced, and a link in the way (to a file or to a folder)
is replaced by what the candidate holds, never followed; a folder where the candidate has
a file (or the reverse) is refused before anything moves.

Example::

    from zeroshot_kernel.auto_research import restore_candidate_source
    restore_candidate_source(".", "rosenbrock", "c004", "best")
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from zeroshot_kernel.auto_research.candidates import RecordedSource, read_candidate, write_files
from zeroshot_kernel.auto_research.records import CANDIDATE_ID
from zeroshot_kernel.auto_research.studies.catalog import StudyError, records_for
from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.safe_files import FileRefused, opened_below


class RestoreError(InvalidInput):
    """The candidate cannot be restored as asked; nothing was written (unless the message
    says what was)."""


@dataclass(frozen=True)
class Restored:
    files: int
    content_sha256: str
    replaced_links: tuple[str, ...] = ()
    """Symbolic links in the target that the candidate's files or folders replaced."""


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
    if not CANDIDATE_ID.match(candidate):
        raise RestoreError(f"study {study!r} has no candidate {candidate[:80]!r}")
    try:
        recorded = read_candidate(records, candidate)
    except FileRefused as refused:  # a link, a FIFO, a device, a file past the limit
        raise RestoreError(
            f"the manifest of {candidate} in study {study!r} cannot be read ({refused}); "
            "nothing was written"
        ) from None
    except (OSError, ValueError):
        raise RestoreError(
            f"the manifest of {candidate} in study {study!r} is damaged; nothing was written"
        ) from None
    if recorded.manifest is None:
        raise RestoreError(f"study {study!r} has no candidate {candidate!r}")
    if not recorded.ok:
        raise RestoreError(
            f"the recorded source of {candidate} does not match its content hash "
            f"({'; '.join(recorded.problems[:3])}); nothing was written"
        )
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise RestoreError(f"{target} is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise RestoreError(f"{target} is not empty; use --force (force=True) to write into it")
    try:
        target.mkdir(parents=True, exist_ok=True)
        with opened_below(target, folder=True) as folder:
            return _write(recorded, folder, target)
    except OSError as blocked:
        raise RestoreError(f"cannot write into {target}: {blocked.strerror or blocked}") from None


def _write(recorded: RecordedSource, folder: int, target: Path) -> Restored:
    """Write the files into a scratch folder inside ``target``, check that they can all
    move into place, then rename them in."""
    assert recorded.manifest is not None
    scratch = f".restore-{secrets.token_hex(6)}"
    os.mkdir(scratch, 0o700, dir_fd=folder)
    moves = _Moves(recorded)
    try:
        with opened_below(folder, scratch, folder=True) as written:
            write_files(written, recorded)
            conflicts = moves.merge(written, folder, act=False)
            if conflicts:
                raise RestoreError(
                    f"{target / conflicts[0]} is in the way; nothing was written "
                    "(move it, or restore into an empty folder)"
                )
            try:
                moves.merge(written, folder, act=True)
            except OSError as blocked:
                raise RestoreError(
                    f"cannot write into {target}: {blocked.strerror or blocked}; "
                    f"{moves.moved} of {len(recorded.files)} file(s) were written"
                ) from None
    finally:
        shutil.rmtree(scratch, dir_fd=folder)
    return Restored(
        files=len(recorded.files),
        content_sha256=recorded.manifest.content_sha256,
        replaced_links=tuple(moves.replaced),
    )


@dataclass
class _Moves:
    """Renaming a written tree into the target, entry by entry, without following links."""

    recorded: RecordedSource
    moved: int = 0
    replaced: list[str] = field(default_factory=list)

    def merge(self, source: int, target: int, prefix: str = "", *, act: bool) -> list[str]:
        """The entries that cannot move (``act`` False), or move them all (``act``): an
        entry absent from the target is renamed in whole, a link in the way is removed
        first, a folder present in both is merged."""
        conflicts: list[str] = []
        for name in sorted(os.listdir(source)):
            path = prefix + name
            incoming = stat.S_ISDIR(os.stat(name, dir_fd=source, follow_symlinks=False).st_mode)
            try:
                existing = os.stat(name, dir_fd=target, follow_symlinks=False).st_mode
            except FileNotFoundError:
                existing = None
            if existing is not None and stat.S_ISDIR(existing) and incoming:
                with (
                    opened_below(source, name, folder=True) as inner_source,
                    opened_below(target, name, folder=True) as inner_target,
                ):
                    conflicts += self.merge(inner_source, inner_target, path + "/", act=act)
            elif (
                existing is not None
                and (stat.S_ISDIR(existing) or incoming)
                and not (stat.S_ISLNK(existing))
            ):
                conflicts.append(path)  # a folder where a file goes, or the reverse
            elif act:
                if existing is not None and stat.S_ISLNK(existing):
                    os.unlink(name, dir_fd=target)
                    self.replaced.append(path)
                os.rename(name, name, src_dir_fd=source, dst_dir_fd=target)
                self.moved += sum(
                    p == path or p.startswith(path + "/") for p in self.recorded.files
                )
        return conflicts
