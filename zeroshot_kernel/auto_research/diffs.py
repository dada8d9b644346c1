"""Applying a unified diff of one file, strictly: every hunk must match the file exactly
where it says (no fuzz, no offsets), or the whole diff is refused with the reason.

A change's diff is data from an agent, so it is parsed as data: header lines (``diff
--git``, ``index``, ``---``/``+++``) are checked, not followed; one that names another file
or declares a symbolic link (mode ``120000``) is refused.
"""

from __future__ import annotations

import re

from zeroshot_kernel.exceptions import InvalidInput

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_HEADERS = (
    "diff --git ",
    "index ",
    "similarity index",
    "old mode ",
    "new mode ",
    "new file mode ",
    "deleted file mode ",
)


class DiffError(InvalidInput):
    """The diff cannot be applied to this file; the message says why."""


def apply_diff(original: str, diff: str, path: str) -> str:
    """``original`` (the current text of ``path``, ``""`` for a new file) with ``diff``
    applied."""
    lines = diff.splitlines()
    source = original.splitlines(keepends=True)
    result: list[str] = []
    position = 0  # lines of ``source`` consumed
    index = 0
    hunks = 0
    while index < len(lines):
        line = lines[index]
        match = _HUNK.match(line)
        if match is None:
            _check_header(line, path)
            index += 1
            continue
        hunks += 1
        start = int(match.group(1))
        old_count = 1 if match.group(2) is None else int(match.group(2))
        new_count = 1 if match.group(4) is None else int(match.group(4))
        at = start - 1 if old_count else start
        if at < position or at > len(source):
            raise DiffError(
                f"hunk {hunks} starts at line {start}, outside the file or before the previous hunk"
            )
        result.extend(source[position:at])
        position = at
        index, position, written = _apply_hunk(
            lines, index + 1, source, position, result, old_count, hunks
        )
        if written != new_count:
            raise DiffError(
                f"hunk {hunks} has {written} new-side lines but its header says {new_count}"
            )
    if hunks == 0:
        raise DiffError("the diff has no hunk (@@ -a,b +c,d @@)")
    result.extend(source[position:])
    return "".join(result)


def _apply_hunk(
    lines: list[str],
    index: int,
    source: list[str],
    position: int,
    result: list[str],
    old_count: int,
    number: int,
) -> tuple[int, int, int]:
    """Apply one hunk's body; returns (next diff line, next source line, new-side lines)."""
    removed = written = 0
    previous = ""
    while index < len(lines):
        line = lines[index]
        if line.startswith("\\"):  # "\ No newline at end of file" for the line before
            if previous.startswith("+"):
                _strip_newline(result)
        elif removed >= old_count and not line.startswith("+"):
            break
        elif line.startswith("+"):
            result.append(line[1:] + "\n")
            written += 1
        elif line.startswith((" ", "-")) or line == "":  # "": a context line, space stripped
            if position >= len(source) or source[position].rstrip("\r\n") != line[1:]:
                raise DiffError(f"hunk {number} does not match the file at line {position + 1}")
            if not line.startswith("-"):
                result.append(source[position])
                written += 1
            position += 1
            removed += 1
        else:
            raise DiffError(f"hunk {number}: a line starts with {line[:1]!r}, not ' ', '-' or '+'")
        previous = line
        index += 1
    if removed != old_count:
        raise DiffError(f"hunk {number} ends early: {removed} of its {old_count} old-side lines")
    return index, position, written


def _strip_newline(result: list[str]) -> None:
    if result and result[-1].endswith("\n"):
        result[-1] = result[-1][:-1]


def _check_header(line: str, path: str) -> None:
    if line.startswith(("--- ", "+++ ")):
        named = line[4:].split("\t", 1)[0].strip()
        if named != "/dev/null" and _strip_prefix(named) != path:
            raise DiffError(f"the diff names {named!r}, not {path!r}")
        return
    if "120000" in line and line.startswith(("new mode ", "new file mode ", "old mode ")):
        raise DiffError("the diff makes a symbolic link; a candidate holds regular files only")
    if line.startswith(_HEADERS) or not line.strip():
        return
    raise DiffError(f"unexpected line outside a hunk: {line[:80]!r}")


def _strip_prefix(name: str) -> str:
    return name[2:] if name.startswith(("a/", "b/")) else name
