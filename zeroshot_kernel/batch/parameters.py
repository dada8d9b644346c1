"""Parameter sets for a batch: ``-p name value`` pairs, a grid file, or the rows of a CSV.

Every source yields the same thing, a list of ``{name: value}`` dicts, one per notebook.
A grid (YAML or JSON mapping) expands to the cross product of its lists, scalars held
fixed; a CSV gives one set per row with values read as YAML scalars (``3`` is an int,
``true`` a bool, ``x`` a string), as ``-p`` values are.

Papermill writes each name into the notebook's parameters cell as ``name = value``, so a
name is source code: every name must be a plain Python identifier (no keyword, no dunder),
checked before any notebook runs; where the notebook has a parameters cell, it must also be
a name that cell assigns (:func:`check_declared`: a typo would otherwise run the default).
Values are data: only JSON-like values (text, numbers, booleans, None, lists, mappings with
text keys), which papermill renders as literals. An empty value is the empty string: YAML
reads it as null, which no one typing ``-p study ''`` means; only ``null`` (``~``) is None.

Example::

    parameter_sets(pairs=[("iterations", "3")], grid="grid.yaml")
    # grid.yaml: {task: [rosenbrock, branin], seed: [1, 2]} -> four sets, iterations=3 each
"""

from __future__ import annotations

import csv
import io
import itertools
import keyword
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

import yaml

from zeroshot_kernel.contract.reading import DocumentError, load_document, read_text, shorten
from zeroshot_kernel.exceptions import InvalidInput

if TYPE_CHECKING:
    from zeroshot_kernel.batch.notebooks import DeclaredParameters

Parameters = dict[str, Any]
MAX_SETS = 10_000


class ParameterError(InvalidInput):
    """A parameter source that cannot be used, saying which and why."""


MAX_NAME_CHARS = 64
"""Longer names are cut in messages."""


def is_name(name: object) -> TypeGuard[str]:
    """Whether ``name`` is a plain Python variable name a parameters cell may assign."""
    return (
        isinstance(name, str)
        and name.isidentifier()
        and name.isascii()
        and not keyword.iskeyword(name)
        and not name.startswith("__")
    )


def check_name(name: object, source: str) -> str:
    """``name`` if it can stand on the left of ``name = value`` and nothing else; raises
    :class:`ParameterError` naming the source and the (shortened) bad name."""
    if is_name(name):
        return name
    raise ParameterError(
        f"{source}: parameter name {shorten(repr(name), MAX_NAME_CHARS)} is not a plain Python "
        "variable name (letters, digits and _, not starting with a digit or __, not a keyword)"
    )


def check_value(value: Any, name: str) -> None:
    """Refuse values papermill could not write as a literal (it would write ``str(value)``
    into the code cell), and text that is not text (a lone surrogate has no UTF-8 form)."""
    if isinstance(value, str):
        _check_text(value, name)
        return
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if math.isfinite(value):
            return
        raise ParameterError(f"parameter {name}: non-finite numbers (inf, nan) cannot be passed")
    if isinstance(value, list):
        for item in value:
            check_value(item, name)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                break
            _check_text(key, name)
            check_value(item, name)
        else:
            return
    raise ParameterError(
        f"parameter {name}: {type(value).__name__} values cannot be passed; "
        "use text, numbers, booleans, null, lists or mappings with text keys"
    )


def _check_text(text: str, name: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ParameterError(
            f"parameter {name}: contains a lone surrogate (an unpaired "
            "\\ud800-\\udfff escape), which is not text"
        ) from None


def check_sets(sets: Sequence[Mapping[str, Any]], source: str = "parameters") -> None:
    """Every name and value of every set, before anything runs."""
    for parameters in sets:
        for name, value in parameters.items():
            check_value(value, check_name(name, source))


def check_declared(
    sets: Sequence[Mapping[str, Any]], declared: DeclaredParameters, notebook: str
) -> None:
    """Refuse a name the notebook's parameters cell does not assign: papermill would inject
    it beside the defaults, and a misspelt ``-p iteration 1`` would quietly run with the
    default ``iterations``."""
    known = set(declared.names)
    unknown = sorted({name for parameters in sets for name in parameters} - known)
    if not unknown:
        return
    listed = ", ".join(declared.names) if declared.names else "none"
    message = (
        f"{'parameter' if len(unknown) == 1 else 'parameters'} {shorten(', '.join(unknown))} "
        f"{'is' if len(unknown) == 1 else 'are'} not assigned in the parameters cell of "
        f"{notebook}; its parameters: {shorten(listed)}"
    )
    if declared.unread:  # the name may well be on a line papermill could not read
        message += f" (papermill could not read: {shorten('; '.join(declared.unread))})"
    raise ParameterError(message)


NULLS = frozenset({"null", "Null", "NULL", "~"})
"""The spellings of YAML's null: the only values that become None."""


def scalar(text: str) -> Any:
    """A command-line or CSV value as YAML reads a scalar; anything else stays text. YAML
    also reads nothing (``''``, blanks, a ``# comment``) as null: that stays text too, so
    ``-p study ''`` passes the empty string the notebook's ``study = ""`` expects."""
    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):  # deep flow collections recurse in the parser
        return text
    if value is None:
        return None if text.strip() in NULLS else text
    return value if isinstance(value, str | int | float | bool) else text


def grid_sets(grid: Mapping[str, Any]) -> list[Parameters]:
    """The cross product of the grid's lists (a scalar is a list of one)."""
    names = list(grid)
    axes = [value if isinstance(value, list) else [value] for value in grid.values()]
    if any(not axis for axis in axes):
        empty = [name for name, axis in zip(names, axes, strict=True) if not axis]
        raise ParameterError(f"grid parameter {empty[0]!r} has an empty list: no notebook to run")
    for name in names:
        check_name(name, "grid")
    count = 1
    for axis in axes:  # counted before anything is built: ten lists of ten are 10^10 sets
        count *= len(axis)
        if count > MAX_SETS:
            raise ParameterError(
                f"the grid's lists multiply to more than {MAX_SETS:,} parameter sets; "
                f"a batch holds at most {MAX_SETS:,}"
            )
    return [dict(zip(names, combination, strict=True)) for combination in itertools.product(*axes)]


def read_grid(path: str | os.PathLike[str]) -> list[Parameters]:
    try:
        document = load_document(path)
    except DocumentError as problem:
        raise ParameterError(f"grid file {problem}") from None
    if not isinstance(document, dict) or not all(isinstance(k, str) for k in document):
        raise ParameterError(
            f"grid file {shorten(os.fspath(path))}: expected a mapping of names to lists"
        )
    return grid_sets(document)


def read_csv(path: str | os.PathLike[str]) -> list[Parameters]:
    """The rows of a CSV file whose header names the parameters; a file whose first line
    holds no parameter name at all is refused without quoting it (a private file named by
    mistake is never printed back)."""
    shown = shorten(os.fspath(path))
    try:
        # A spreadsheet's "CSV UTF-8" export starts with a byte-order mark: not a name.
        text = read_text(path).removeprefix("\ufeff")
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, [])
        # Blank lines are no rows; one row past the limit is enough to say "too many".
        rows = list(itertools.islice((row for row in reader if row), MAX_SETS + 1))
    except DocumentError as problem:
        raise ParameterError(f"CSV file {problem}") from None
    except csv.Error as problem:
        raise ParameterError(f"CSV file {shown}: {shorten(str(problem))}") from None
    if header and not any(is_name(name) for name in header):
        raise ParameterError(
            f"CSV file {shown} is not a parameter table: its first line names no parameter"
        )
    named: set[str] = set()
    for name in header:
        if check_name(name, f"CSV file {shown} header") in named:
            raise ParameterError(
                f"CSV file {shown}: the header names {name} twice (which column would count?)"
            )
        named.add(name)
    if any(len(row) != len(header) for row in rows):
        raise ParameterError(f"CSV file {shown}: a row has more or fewer cells than the header")
    return [{name: scalar(value) for name, value in zip(header, row, strict=True)} for row in rows]


def parameter_sets(
    pairs: Iterable[tuple[str, str]] = (),
    grid: str | os.PathLike[str] | None = None,
    rows: str | os.PathLike[str] | None = None,
) -> list[Parameters]:
    """One set per notebook: the grid's or CSV's sets (or one empty set), each with the
    ``-p`` pairs on top."""
    if grid is not None and rows is not None:
        raise ParameterError("give a grid file or a CSV file, not both")
    sets: Sequence[Parameters] = (
        read_grid(grid) if grid is not None else read_csv(rows) if rows is not None else [{}]
    )
    if not sets:
        raise ParameterError("the parameter source has no rows: no notebook to run")
    if len(sets) > MAX_SETS:
        raise ParameterError(
            f"more than {MAX_SETS:,} parameter sets; a batch holds at most {MAX_SETS:,}"
        )
    fixed = {check_name(name, "-p"): scalar(value) for name, value in pairs}
    combined = [{**parameters, **fixed} for parameters in sets]
    check_sets(combined)
    return combined
