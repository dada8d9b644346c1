"""Where a batch writes: a folder of its own, ``<output-dir>/<batch id>/``.

Two batches never share a folder, so one never overwrites the other's notebooks (each
item's notebook is named after the notebook and the item's index). The output folder must
lie inside the workspace unless that is asked for; it is resolved once, then opened
without following a link, and the batch's folder is created in it (never an existing
one), so a link planted on the way cannot move the writes elsewhere. An item's path that
someone replaced with a link before a resume is removed, never written through.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path, PurePosixPath

from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.safe_files import FileRefused, opened_below
from zeroshot_kernel.workspace import find_workspace


class OutputOutsideWorkspace(InvalidInput):
    """The output directory lies outside the workspace and that was not asked for."""

    def __init__(self, output: Path, workspace: Path) -> None:
        super().__init__(
            f"output directory {output} is outside the workspace {workspace}; "
            "allow it explicitly (--allow-outside-workspace, "
            "allow_outside_workspace=True) or choose a folder inside it"
        )


class OutputUnusable(InvalidInput):
    """The output directory is not a folder, or cannot be created or written."""


def output_directory(
    output_dir: str | os.PathLike[str], *, allow_outside_workspace: bool = False
) -> Path:
    """The resolved output directory, refused when it leaves the workspace unasked."""
    out = Path(output_dir).resolve()
    workspace = find_workspace()
    if not allow_outside_workspace and not out.is_relative_to(workspace):
        raise OutputOutsideWorkspace(out, workspace)
    return out


def create_batch_folder(out: Path, batch_id: str) -> Path:
    """Create ``out`` (a resolved path) as needed and, in it, the new folder ``batch_id``;
    :class:`OutputUnusable` when ``out`` is a file, or cannot be created or written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with opened_below("/", PurePosixPath(out).relative_to("/"), folder=True) as folder:
            os.mkdir(batch_id, 0o777, dir_fd=folder)
    except (FileExistsError, NotADirectoryError, FileRefused):
        raise OutputUnusable(f"output directory {out} is not a folder") from None
    except OSError as problem:
        reason = problem.strerror or str(problem)
        raise OutputUnusable(f"cannot write into the output directory {out}: {reason}") from None
    return out / batch_id


def check_batch_folder(folder: str) -> None:
    """A recorded batch's folder must still be a folder reached without a link (made
    again, as the first run made it, when it was removed since)."""
    path = Path(folder)
    try:
        with opened_below("/", PurePosixPath(path).relative_to("/"), folder=True):
            return
    except FileNotFoundError:
        create_batch_folder(path.parent, path.name)
    except (FileRefused, OSError) as problem:
        raise OutputUnusable(
            f"the batch's output folder {folder} cannot be used ({problem}); nothing was run"
        ) from None


def clear_link(path: str) -> None:
    """Remove a link (or a FIFO, a socket) planted at an item's output path, so that the
    notebook written there lands in the batch's folder instead of where the link points
    (a folder in the way fails the item when its notebook is written)."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            os.unlink(path)
