"""The notebook a batch executes, checked before anything is recorded or started: a
regular file of at most :data:`MAX_NOTEBOOK_BYTES` holding a Jupyter notebook (JSON, format
4, with its cells). Anything else (``/etc/passwd``, a FIFO, a folder) is refused at once,
instead of failing every item only after its kernel starts were retried.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from zeroshot_kernel.contract.reading import DocumentError, read_text
from zeroshot_kernel.exceptions import InvalidInput

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
"""Notebooks carry their outputs (images included): larger than a graph document."""


class NotANotebook(InvalidInput):
    """The batch's notebook cannot be read, or is not a Jupyter notebook."""


def check_notebook(path: str | os.PathLike[str]) -> Path:
    """The resolved path of ``path`` once it holds a Jupyter notebook (format 4)."""
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
    return source
