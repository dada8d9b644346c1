"""A researcher's change, checked and applied to a scratch copy of its parent.

A change comes from an agent, so everything about it is checked before anything is
written, and every way it can be wrong is a reason in a list (the measure step records it
as a ``change_rejected`` result), never an exception: a payload that does not parse, bad
parameters (any parameters, for a task without a search space), a path that is absolute,
not normalised, leaves ``candidate/``, goes through a symbolic link or is not ``editable``,
an edit too large, a diff that does not apply.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from zeroshot_kernel.auto_research.candidates import write_params
from zeroshot_kernel.auto_research.diffs import DiffError, apply_diff
from zeroshot_kernel.auto_research.protocol import Change, Edit
from zeroshot_kernel.auto_research.task import Params, ResearchTask, TaskSpec

MAX_EDITS = 64
MAX_FILE_BYTES = 1 << 20
MAX_CHANGE_CHARS = 4 << 20
MAX_DIFF_CHARS = 20_000
"""How much of the applied change the evidence shows the reviewer."""


def parse_change(document: Any) -> Change | list[str]:
    """The change in ``document`` (its wire form), or why it is not one."""
    try:
        return Change.from_wire(document)
    except ValidationError as invalid:
        return [
            f"the change is malformed: {'.'.join(map(str, e['loc'])) or 'change'}: {e['msg']}"
            for e in invalid.errors()[:8]
        ]


def apply_change(
    task: ResearchTask, change: Change, parent_params: Params, source: Path
) -> tuple[Params, list[str]]:
    """Apply ``change`` to ``source`` (a scratch copy of the parent): the candidate's
    parameters, and the reasons it was refused (empty when it applied)."""
    spec = task.spec
    reasons = _check_edits(spec, change)
    unknown = sorted(set(change.params) - {p.name for p in spec.search_space})
    if change.params and not spec.search_space:
        reasons.append(
            f"parameters given ({', '.join(sorted(change.params))}), but the task "
            "has no search space (task.yaml searchSpace): only its editable files "
            "can change"
        )
    elif unknown:
        reasons.append(
            f"unknown parameters: {', '.join(unknown)} (the search space has "
            f"{', '.join(p.name for p in spec.search_space)})"
        )
    if reasons:
        return parent_params, reasons
    if change.params:
        try:
            params = spec.check_params({**parent_params, **change.params})
        except ValueError as bad:
            return parent_params, [f"bad parameters: {bad}"]
        write_params(source, task, params)
    for edit in change.edits:
        problem = _apply_edit(source, edit)
        if problem:
            return parent_params, [problem]
    return _read_params(spec, source)


def _check_edits(spec: TaskSpec, change: Change) -> list[str]:
    reasons = []
    if len(change.edits) > MAX_EDITS:
        reasons.append(f"{len(change.edits)} edits; a change holds at most {MAX_EDITS}")
    if sum(len(e.text) for e in change.edits) > MAX_CHANGE_CHARS:
        reasons.append(f"the edits hold more than {MAX_CHANGE_CHARS} characters")
    paths = [e.path for e in change.edits]
    reasons += [
        f"{path!r} is edited more than once" for path in sorted(set(paths)) if paths.count(path) > 1
    ]
    for edit in change.edits[:MAX_EDITS]:
        problem = path_problem(spec, edit.path)
        if problem:
            reasons.append(problem)
        elif change.params and edit.path == spec.params_file:
            reasons.append(f"{edit.path!r} is both edited and set by the parameters; do one")
    return reasons


def path_problem(spec: TaskSpec, path: str) -> str | None:
    """Why a change may not edit ``path``, or ``None``."""
    parts = path.split("/")
    if any(ord(c) < 32 or c == "\\" for c in path):
        return f"{path!r}: control characters and backslashes are not allowed in a path"
    if path.startswith("/"):
        return f"{path!r} is absolute; paths are relative to candidate/"
    if ".." in parts:
        return f"{path!r} leaves candidate/ ('..')"
    if any(part in ("", ".") for part in parts):
        return f"{path!r} is not a normalised path (empty or '.' parts)"
    if "__pycache__" in parts or path.endswith(".pyc"):
        return f"{path!r}: byte-code caches are never part of a candidate"
    if not spec.editable:
        return (
            f"{path!r}: the task declares no editable files (task.yaml editable); only "
            "its parameters can change"
        )
    if not spec.is_editable(path):
        return f"{path!r} is outside the task's editable files ({', '.join(spec.editable)})"
    return None


def _apply_edit(source: Path, edit: Edit) -> str | None:
    target = source / edit.path
    for ancestor in reversed(target.relative_to(source).parents):
        folder = source / ancestor
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return f"{edit.path!r} goes through {ancestor.as_posix()!r}, which is not a folder"
    if target.is_symlink() or target.is_dir():
        return f"{edit.path!r} is a symbolic link or a folder, not a file"
    if edit.kind == "delete":
        if not target.is_file():
            return f"{edit.path!r} cannot be deleted: the parent has no such file"
        target.unlink()
        return None
    if edit.kind == "contents":
        text = edit.text
    else:
        try:
            original = target.read_text(encoding="utf-8") if target.is_file() else ""
            text = apply_diff(original, edit.text, edit.path)
        except UnicodeDecodeError:
            return f"{edit.path!r} is not UTF-8 text, so a diff cannot change it"
        except DiffError as failed:
            return f"the diff of {edit.path!r} does not apply: {failed}"
    data = text.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        return f"{edit.path!r} would hold {len(data)} bytes; a file may hold {MAX_FILE_BYTES}"
    target.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    return None


def _read_params(spec: TaskSpec, source: Path) -> tuple[Params, list[str]]:
    """The parameters the built candidate's params file holds (none without a search
    space: a code task need not have a params file)."""
    if not spec.search_space:
        return {}, []
    try:
        document = json.loads((source / spec.params_file).read_text(encoding="utf-8"))
        if not isinstance(document, dict):
            raise ValueError("it holds no JSON object")
        return spec.check_params(document), []
    except FileNotFoundError:
        return {}, [f"{spec.params_file} is missing from the candidate"]
    except (ValueError, UnicodeDecodeError) as bad:
        return {}, [f"{spec.params_file} is not valid: {bad}"]


def describe_diff(parent: Path, candidate: Path, changed: list[str]) -> str:
    """A unified diff of ``changed`` files from ``parent`` to ``candidate``, shortened to
    :data:`MAX_DIFF_CHARS`."""

    def contents(folder: Path) -> dict[str, bytes]:
        return {path: (folder / path).read_bytes() for path in changed if (folder / path).is_file()}

    return diff_contents(contents(parent), contents(candidate), changed)


def diff_contents(
    before: Mapping[str, bytes], after: Mapping[str, bytes], changed: list[str]
) -> str:
    """A unified diff of ``changed`` paths between two sets of file contents (a path
    missing from one side was added or deleted), shortened to :data:`MAX_DIFF_CHARS`."""
    chunks = []
    for path in changed:
        try:
            old = before[path].decode("utf-8").splitlines(True) if path in before else []
            new = after[path].decode("utf-8").splitlines(True) if path in after else []
        except UnicodeDecodeError:
            chunks.append(f"binary file {path} changed\n")
            continue
        chunks.append(
            "".join(
                difflib.unified_diff(
                    old,
                    new,
                    f"a/{path}" if old else "/dev/null",
                    f"b/{path}" if new else "/dev/null",
                )
            )
        )
    text = "".join(chunks)
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"\n... ({len(text) - MAX_DIFF_CHARS} more characters)\n"
    return text
