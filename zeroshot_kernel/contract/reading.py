"""Reading JSON and YAML documents from untrusted text and files, within fixed limits.

Every document a user hands over (a graph, a runtime plan, an input, a grid, a registry, a
``task.yaml``) comes through here, so one set of limits bounds the time and memory reading
may take, whatever the input:

- files are read only when they are regular files, and at most :data:`MAX_DOCUMENT_BYTES`;
- nesting deeper than :data:`MAX_NESTING` is refused before any recursive parser sees it;
- YAML aliases may repeat at most :data:`MAX_ALIAS_EXPANSION` values (an alias bomb of a
  few hundred bytes stands for billions), and the document they expand to is held to
  :data:`MAX_DOCUMENT_BYTES` too, counted before it is composed; non-finite numbers,
  duplicate JSON keys and lone surrogates are refused;
- a YAML file whose top level is plain text is not a document, and no error repeats a
  file's content (a private file named by mistake is never echoed back).

Each refusal is a :class:`DocumentError` with a one-line message.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

import yaml

from zeroshot_kernel.exceptions import InvalidInput

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
"""The largest document read, from a file or inline (the ledger stores at most 2 MiB of
an admitted submission, so nothing larger could run anyway)."""
MAX_NESTING = 256
"""The deepest nesting of objects and lists accepted (a graph's own depth ceiling is 64
nodes, a few levels each)."""
MAX_ALIAS_EXPANSION = 100_000
"""How many values YAML aliases may add by repeating anchored nodes."""
MAX_SHOWN_CHARS = 200
"""Names, paths and values quoted in messages are cut to this length."""
MAX_SHAPE_DIAGNOSTICS = 200
"""Past this many shape problems in a graph, one more diagnostic counts the rest."""
MAX_VIOLATIONS = 100
"""Ways a value fails its type reported per value (a value can be as large as its
document); one more diagnostic counts the rest."""
MAX_PRINTED_DIAGNOSTICS = 50
"""Text output lists this many diagnostics, then counts the rest (``--json`` has all)."""

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = str.maketrans({"[": "1", "{": "1", "]": "2", "}": "2"})


class DocumentError(InvalidInput):
    """The input could not be read as a JSON or YAML document within the limits."""


class DocumentUnreadable(DocumentError):
    """The file itself cannot be read: missing, not a regular file, not permitted. (Its
    content, when it has one, was never looked at.)"""


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (marked with an ellipsis), for messages."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def read_text(path: str | os.PathLike[str], limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes.

    Devices, FIFOs and directories are refused before reading (``/dev/zero`` never ends,
    a FIFO may never be written), and at most ``limit + 1`` bytes are read, so a file that
    grows meanwhile is still bounded.
    """
    shown = shorten(os.fspath(path))
    try:
        # Non-blocking, so opening a FIFO returns at once instead of waiting for a writer.
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
            data = handle.read(limit + 1) if regular else b""
    except OSError as error:
        raise DocumentUnreadable(f"{shown}: {error.strerror or error}") from None
    except ValueError:  # a NUL byte in the name
        raise DocumentUnreadable(f"{shown!r}: not a usable file name") from None
    if not regular:
        raise DocumentUnreadable(f"{shown}: not a regular file")
    if len(data) > limit:
        raise DocumentError(f"{shown}: larger than the {limit:,}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentError(f"{shown}: not UTF-8 text (byte {error.start})") from None


def load_document(path: str | os.PathLike[str]) -> Any:
    """Read a JSON or YAML file within the limits; ``DocumentError`` otherwise."""
    try:
        text = read_text(path)
    except DocumentError as error:  # keeps its kind: unreadable file or refused content
        raise type(error)(f"cannot read {error}") from None
    try:
        return loads_document(text, from_file=True)
    except DocumentError as error:
        raise DocumentError(f"{shorten(os.fspath(path))}: {error}") from None


def loads_document(text: str, *, yaml_allowed: bool = True, from_file: bool = False) -> Any:
    """Parse JSON (strictly: no NaN, no duplicate keys), falling back to YAML.

    ``from_file``: the text came from a file the user named, so YAML that is only plain
    text is refused without repeating it.
    """
    if len(text) > MAX_DOCUMENT_BYTES or len(text.encode("utf-8", "surrogatepass")) > (
        MAX_DOCUMENT_BYTES
    ):
        raise DocumentError(f"the document is larger than the {MAX_DOCUMENT_BYTES:,}-byte limit")
    looks_like_json = text.lstrip().startswith(("{", "["))
    if looks_like_json:
        _check_json_nesting(text)
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as json_error:
        if not yaml_allowed or looks_like_json:
            raise DocumentError(
                f"not valid JSON: {json_error.msg} (line {json_error.lineno}, "
                f"column {json_error.colno})"
            ) from None
        value = _load_yaml(text, from_file=from_file)
    except ValueError as error:
        raise DocumentError(_value_problem(error)) from None
    _check_values(value)
    return value


def _value_problem(error: ValueError) -> str:
    """The one-line reason a parser refused a value (Python's own words for an integer
    past its conversion limit name a setting the user cannot reach)."""
    if "integer string conversion" in str(error):
        return (
            f"the document contains an integer of more than {sys.get_int_max_str_digits():,} digits"
        )
    return shorten(str(error))


def _check_json_nesting(text: str) -> None:
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if len(brackets) <= MAX_NESTING:
        return
    steps = (1 if step == "1" else -1 for step in brackets.translate(_DEPTH_STEP))
    if max(accumulate(steps), default=0) > MAX_NESTING:
        raise DocumentError(f"the document is nested deeper than {MAX_NESTING} levels")


def _load_yaml(text: str, *, from_file: bool) -> Any:
    """Compose the YAML only after its events passed: bounded nesting, and aliases that
    expand it by at most :data:`MAX_ALIAS_EXPANSION` values and to at most
    :data:`MAX_DOCUMENT_BYTES` bytes."""
    try:
        _check_yaml_events(yaml.parse(text, Loader=_Loader))
        value = yaml.load(text, Loader=_Loader)  # a safe loader (C when available)
    except yaml.YAMLError as error:
        raise DocumentError(f"neither JSON nor YAML: {_yaml_problem(error)}") from None
    except DocumentError:  # a limit the events passed (a ValueError too): as it is
        raise
    except ValueError as error:  # a scalar its constructor cannot convert (a huge integer)
        raise DocumentError(_value_problem(error)) from None
    if from_file and not isinstance(value, dict | list):
        raise DocumentError("not a JSON or YAML document (an object or a list)")
    return value


def _check_yaml_events(events: Iterable[yaml.Event]) -> None:
    """Measure what the document stands for once its aliases are expanded, before it is
    composed: an alias repeats its anchored node in values and in bytes, so a few hundred
    bytes of nested aliases stand for billions of values, and a 3 MiB string aliased
    20,000 times for 60 GB (every later reader, from the value check to the ledger, would
    expand it). Each value counts its text's UTF-8 bytes plus one."""
    open_sizes: list[list[int]] = []  # [values, bytes] of each collection being read
    open_anchors: list[str | None] = []
    anchored: dict[str, tuple[int, int]] = {}
    added_values = 0
    expanded_bytes = 0  # the whole document's, counted on once the first alias is seen

    def settle(values: int, size: int, anchor: str | None) -> None:
        if anchor is not None:
            anchored[anchor] = (values, size)
        if open_sizes:
            open_sizes[-1][0] += values
            open_sizes[-1][1] += size

    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_sizes) >= MAX_NESTING:
                raise DocumentError(f"the document is nested deeper than {MAX_NESTING} levels")
            open_sizes.append([1, 1])
            open_anchors.append(event.anchor)
            expanded_bytes += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            values, size = open_sizes.pop()
            settle(values, size, open_anchors.pop())
        elif isinstance(event, yaml.ScalarEvent):
            size = len(event.value.encode("utf-8", "surrogatepass")) + 1
            expanded_bytes += size
            settle(1, size, event.anchor)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:  # JSON has no cycles: no reader could walk it
                raise DocumentError("a YAML alias refers to a node that contains it (a cycle)")
            values, size = anchored.get(event.anchor or "", (1, 1))
            added_values += values
            expanded_bytes += size
            if added_values > MAX_ALIAS_EXPANSION:
                raise DocumentError(
                    f"YAML aliases expand the document by more than {MAX_ALIAS_EXPANSION:,} values"
                )
            settle(values, size, None)
        if added_values and expanded_bytes > MAX_DOCUMENT_BYTES:
            raise DocumentError(
                f"YAML aliases expand the document past the {MAX_DOCUMENT_BYTES:,}-byte limit"
            )


def _yaml_problem(error: yaml.YAMLError) -> str:
    """The parser's complaint and where, without the quoted line (it could be a secret)."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return shorten(f"{error.problem or error.context or 'unreadable'}{where}")
    return "unreadable"


def _check_values(value: Any) -> None:
    """One pass in C over the parsed value: finite numbers and valid Unicode only."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False, default=repr).encode("utf-8")
    except UnicodeEncodeError:
        raise DocumentError(
            "the document contains a lone surrogate (an unpaired \\ud800-\\udfff escape), "
            "which is not text"
        ) from None
    except ValueError:
        raise DocumentError("the document contains a non-finite number") from None
    except RecursionError:
        raise DocumentError(f"the document is nested deeper than {MAX_NESTING} levels") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {shorten(repr(key))}")
        result[key] = value
    return result
