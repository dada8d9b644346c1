"""The notebook a batch executes, checked before anything is recorded or started: a
regular file of at most :data:`MAX_NOTEBOOK_BYTES` holding a Jupyter notebook (JSON, format
4, with its cells). Anything else (``/etc/passwd``, a FIFO, a folder) is refused at once,
instead of failing every item only after its kernel starts were retried.

Its parameters cell (the first cell tagged ``parameters``) says which names a batch may
set: :func:`declared_parameters` reads them with papermill's own inspection, the one
``papermill --help-notebook`` uses.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroshot_kernel.contract.reading import DocumentError, read_text
from zeroshot_kernel.exceptions import InvalidInput

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
"""Notebooks carry their outputs (images included): larger than a graph document."""


class NotANotebook(InvalidInput):
    """The batch's notebook cannot be read, or is not a Jupyter notebook."""


@dataclass(frozen=True)
class DeclaredParameters:
    """The names a notebook's parameters cell assigns, and papermill's words for the
    lines of it that it could not read (a name on such a line is missed)."""

    names: tuple[str, ...]
    unread: tuple[str, ...] = ()


def read_notebook(path: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    """The resolved path of ``path`` and its document, once it holds a Jupyter notebook
    (format 4)."""
    source = Path(path).resolve()
    try:
        text = read_text(source, MAX_NOTEBOOK_BYTES)
    except DocumentError as problem:
        raise NotANotebook(f"cannot read the notebook {problem}") from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise NotANotebook(f"{source} is not a Jupyter notebook (not JSON)") from None
    if (
        not isinstance(document, dict)
        or document.get("nbformat") != 4
        or not isinstance(document.get("cells"), list)
    ):
        raise NotANotebook(f"{source} is not a Jupyter notebook (format 4, with cells)")
    return source, document


def declared_parameters(
    document: dict[str, Any], kernel_name: str | None = None
) -> DeclaredParameters | None:
    """What the parameters cell of ``document`` (a checked notebook) assigns, as papermill
    infers it for the kernel that will run it; None when the notebook has no such cell
    (papermill then injects the parameters at the top, any name is fine) or papermill
    cannot inspect its language (it is not ours to guess)."""
    cell = _parameters_cell(document)
    if cell is None:
        return None
    from papermill.exceptions import PapermillException
    from papermill.translators import papermill_translators

    try:
        translator = papermill_translators.find_translator(
            *_kernel_and_language(document, kernel_name)
        )
    except PapermillException:  # no translator: papermill fails the item itself
        return None
    unread = _Unread()
    # The translator logs each line it cannot read: kept for the refusal, not printed.
    logger = logging.getLogger(translator.__module__)
    logger.addFilter(unread)
    try:
        found = translator.inspect(cell)
    except NotImplementedError:
        return None
    finally:
        logger.removeFilter(unread)
    return DeclaredParameters(tuple(p.name for p in found), tuple(unread.messages))


class _Unread(logging.Filter):
    """Keeps the records it stops: papermill's words go into our one-line refusal."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.messages.append(record.getMessage())
        return False


def _parameters_cell(document: dict[str, Any]) -> dict[str, Any] | None:
    """The first cell tagged ``parameters`` (the one papermill parameterises), with its
    source as one string; any part of the document may be malformed."""
    for cell in document["cells"]:
        metadata = cell.get("metadata") if isinstance(cell, dict) else None
        tags = metadata.get("tags") if isinstance(metadata, dict) else None
        if isinstance(tags, list) and "parameters" in tags:
            source = cell.get("source")
            if isinstance(source, list):  # the file's form: one string per line
                source = "".join(line for line in source if isinstance(line, str))
            return {"source": source if isinstance(source, str) else ""}
    return None


def _kernel_and_language(
    document: dict[str, Any], kernel_name: str | None
) -> tuple[str | None, str | None]:
    """What papermill picks a translator by: the kernel (the override first), else the
    notebook's language."""
    metadata = document.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    kernelspec = metadata.get("kernelspec")
    kernelspec = kernelspec if isinstance(kernelspec, dict) else {}
    info = metadata.get("language_info")
    info = info if isinstance(info, dict) else {}

    def text(value: object) -> str | None:
        return value if isinstance(value, str) and value else None

    language = text(info.get("name")) or text(kernelspec.get("language"))
    return kernel_name or text(kernelspec.get("name")), language
