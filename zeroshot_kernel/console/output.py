"""Shared CLI plumbing: reading documents, printing diagnostics, exit codes."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:  # imported where used: a command's --help loads neither pydantic nor yaml
    from pydantic import BaseModel

    from zeroshot_kernel.contract.diagnostics import GraphDiagnostic

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
MAX_PATH_CHARS = 4096


def printable(text: str) -> str:
    """``text`` as it can be written to any terminal or pipe: a lone surrogate (valid in a
    Python string, never in UTF-8) becomes its escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:)[^\s/@]*@")


def hide_passwords(text: str) -> str:
    """``text`` with the password of every URL in it hidden: a ledger URL given where a
    name was expected (``--target postgresql://u:secret@host/db``) is echoed without it.

    >>> hide_passwords("no target 'postgresql://u:secret@db/x'")
    "no target 'postgresql://u:***@db/x'"
    """
    return _URL_PASSWORD.sub(r"\1***@", text)


def fail_usage(message: str) -> NoReturn:
    """Print ``message`` to stderr and exit 2 (usage error or unreadable input)."""
    typer.echo(f"error: {printable(hide_passwords(message))}", err=True)
    raise typer.Exit(EXIT_USAGE)


def read_document(path: Path, *, as_json: bool = False) -> Any:
    """A graph document from a file, read as every command reads one: a file that cannot
    be read is a usage error (exit 2); one that is no JSON or YAML, is over a reading limit
    or holds no object is rejected with admission's diagnostic (exit 1; ``as_json``: as
    a JSON envelope); a file without any graph field is refused without quoting it."""
    from zeroshot_kernel.admission.admit import verify_document
    from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
    from zeroshot_kernel.contract.reading import DocumentError, DocumentUnreadable, load_document

    try:
        document = load_document(path)
    except DocumentUnreadable as unreadable:
        fail_usage(str(unreadable))
    except DocumentError as refused:  # over a limit, or no JSON/YAML: the graph is rejected
        message = f"the graph document was refused: {refused}"
        reject([GraphDiagnostic(code="invalid_graph_shape", path=[], message=message)], as_json)
    if not isinstance(document, dict):  # a string is no path to another file
        reject(verify_document(document).diagnostics, as_json)
    return graph_document(document, path)


def reject(diagnostics: Sequence[GraphDiagnostic], as_json: bool) -> NoReturn:
    """Print why a graph was rejected (``as_json``: the ``validate --json`` envelope) and
    exit 1."""
    if as_json:
        print_json({"status": "rejected", "diagnostics": [d.to_wire() for d in diagnostics]})
    else:
        print_diagnostics(diagnostics)
    raise typer.Exit(EXIT_REJECTED)


def graph_document(document: Any, path: Path) -> Any:
    """``document`` if it could be a graph; a file without any graph field (a private file
    named by mistake) is refused without quoting it."""
    from zeroshot_kernel.contract.graph import GraphSpec
    from zeroshot_kernel.contract.reading import shorten

    return _of_kind(document, model_fields(GraphSpec), "a graph document", shorten(str(path)))


def read_inline_or_file(
    value: str, what: str, *, fields: Collection[str] | None = None, kind: str = "document"
) -> Any:
    """``JSON`` inline, or a JSON/YAML file given as ``@path`` or as an existing path.

    ``fields``: the top-level fields ``kind`` can have; a file with none of them is
    refused without quoting it (naming a private file by mistake must not print it)."""
    from zeroshot_kernel.contract.reading import (
        DocumentError,
        load_document,
        loads_document,
        shorten,
    )

    try:
        path = (
            value[1:]
            if value.startswith("@")
            else (
                value
                if not value.lstrip().startswith(("{", "[", '"')) and _is_file(value)
                else None
            )
        )
        if path is None:
            return loads_document(value, yaml_allowed=False)
        document = load_document(path)
    except DocumentError as error:
        fail_usage(f"{what}: {error}")
    return _of_kind(document, fields, kind, f"{what}: {shorten(path)}")


def read_runtime(value: str) -> Any:
    """A ``--runtime`` plan, inline or from a file."""
    from zeroshot_kernel.harness.plan import RuntimePlan

    return read_inline_or_file(
        value, "--runtime", fields=model_fields(RuntimePlan), kind="a runtime plan"
    )


def read_input(value: str, graph: Any = None) -> Any:
    """An ``--input``, inline or from a file; with the graph document at hand, a file
    holding none of the fields its initial input declares is refused unquoted."""
    declared = graph.get("initialInput") if isinstance(graph, dict) else None
    fields = declared.get("fields") if isinstance(declared, dict) else None
    return read_inline_or_file(
        value,
        "--input",
        kind="an input for this graph",
        fields=list(fields) if isinstance(fields, dict) else None,
    )


def model_fields(model: type[BaseModel]) -> set[str]:
    """The wire names of a model's fields."""
    return {info.alias or name for name, info in model.model_fields.items()}


def _of_kind(document: Any, fields: Collection[str] | None, kind: str, source: str) -> Any:
    if fields is None or not isinstance(document, dict) or not document:
        return document
    if any(key in fields for key in document):
        return document
    fail_usage(f"{source} is not {kind}: none of its top-level fields is one {kind} has")


def _is_file(value: str) -> bool:
    if len(value) > MAX_PATH_CHARS or "\0" in value:
        return False
    try:
        return Path(value).is_file()
    except (OSError, ValueError):
        return False


def print_json(value: Any) -> None:
    typer.echo(printable(json.dumps(value, indent=2, ensure_ascii=False)))


def print_diagnostics(diagnostics: Sequence[GraphDiagnostic]) -> None:
    """One block per diagnostic: severity, code, readable path, then what to change; past
    :data:`~zeroshot_kernel.contract.reading.MAX_PRINTED_DIAGNOSTICS`, only how many more
    there are."""
    from zeroshot_kernel.contract.reading import MAX_PRINTED_DIAGNOSTICS, shorten

    for diagnostic in diagnostics[:MAX_PRINTED_DIAGNOSTICS]:
        nodes = ", ".join(shorten(name) for name in diagnostic.related_nodes[:10])
        related = f"  (nodes: {nodes})" if nodes else ""
        typer.echo(
            printable(
                f"{diagnostic.severity}: {diagnostic.code} at {diagnostic.readable_path()}{related}"
            )
        )
        typer.echo(printable(f"    {shorten(diagnostic.message, 1000)}"))
    count = len(diagnostics)
    if count > MAX_PRINTED_DIAGNOSTICS:
        typer.echo(f"... and {count - MAX_PRINTED_DIAGNOSTICS} more (--json lists every one).")
    typer.echo(f"{count} problem{'s' if count != 1 else ''} found.")


def camel_keys(value: Any) -> Any:
    """``value`` with every mapping's keys in camelCase, as the graph contract and every
    ``--json`` output write them."""
    from pydantic.alias_generators import to_camel

    if isinstance(value, dict):
        return {to_camel(str(key)): camel_keys(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(item) for item in value]
    return value
