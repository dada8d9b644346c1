"""Results a notebook records for whoever executed it: a batch, a report, a test.

A research notebook calls :func:`record` in its last cell; the values travel inside the
executed notebook as one output with their own MIME type, so reading them back
(:func:`read_results`) needs only the ``.ipynb`` file, not the kernel that wrote it.

Example (the last cell of a parameterised notebook)::

    from zeroshot_kernel.batch import record
    record(run_id=run.id, metric=incumbent.metric, rounds=len(view.rounds))
"""

from __future__ import annotations

import json
import os
from typing import Any

RESULT_MIME = "application/vnd.zeroshot.result+json"


def record(**values: Any) -> None:
    """Display ``values`` (JSON-ready) as this notebook's result; a later call adds to and
    overrides an earlier one's keys."""
    from IPython.display import display

    payload = json.loads(json.dumps(values))  # fails here, not in the reader, if not JSON
    summary = ", ".join(f"{key}={value!r}" for key, value in payload.items())
    display(
        {RESULT_MIME: payload, "text/plain": f"recorded: {summary}"},  # type: ignore[no-untyped-call]
        raw=True,
    )


def read_results(notebook: str | os.PathLike[str]) -> dict[str, Any]:
    """Every value the executed ``notebook`` recorded, later records winning;
    :class:`~zeroshot_kernel.batch.notebooks.NotANotebook` (a ``ValueError``) when it cannot
    be read or is no Jupyter notebook."""
    from zeroshot_kernel.batch.notebooks import read_notebook

    _, document = read_notebook(notebook)
    results: dict[str, Any] = {}
    for cell in document["cells"]:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else []:
            data = output.get("data") if isinstance(output, dict) else None
            payload = data.get(RESULT_MIME) if isinstance(data, dict) else None
            if isinstance(payload, dict):
                results.update(payload)
    return results
