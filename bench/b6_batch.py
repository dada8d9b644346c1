"""B6: a batch of 8 parameterised research notebooks, ours against sequential papermill.

The notebook is ``research_templates/research.ipynb`` (one auto-research round on
rosenbrock or branin, alternately, each in a workspace of its own). Ours is ``run_batch``
with two local workers; the peer is plain ``papermill.execute_notebook`` called for the
same notebooks one after another, as a script would. Then 100 light notebooks through
``run_batch`` count the kernel starts that failed (retries included).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat

from bench.harness import Report, Summary, alternate, ratios, require, timed, versions
from zeroshot_kernel.auto_research.task import BUNDLED_TASKS
from zeroshot_kernel.batch import run_batch

NOTEBOOKS = 8
WORKERS = 2
STARTS = 100
BAR_SPEEDUP = 1.8
RESEARCH = BUNDLED_TASKS / "research.ipynb"


def parameters(directory: Path) -> list[dict[str, Any]]:
    tasks = ["rosenbrock", "branin"]
    return [
        {
            "task": tasks[i % 2],
            "iterations": 1,
            "workspace": str(directory / f"ws{i}"),
            "ledger": str(directory / "runs.db"),
        }
        for i in range(NOTEBOOKS)
    ]


def in_fresh_directory(body: Callable[[Path], object]) -> Callable[[], float]:
    def sample() -> float:
        directory = Path(tempfile.mkdtemp(prefix="zeroshot-b6-"))
        try:
            return timed(lambda: body(directory))
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    return sample


def ours(directory: Path) -> None:
    status = run_batch(
        RESEARCH,
        parameters(directory),
        output_dir=directory / "out",
        workers=WORKERS,
        ledger=directory / "batches.db",
        progress=False,
        allow_outside_workspace=True,
    )
    failed = [item.error for item in status.items if item.status != "succeeded"]
    if failed:
        raise AssertionError(f"B6: our batch failed items: {failed}")


def sequential_papermill(directory: Path) -> None:
    import papermill

    (directory / "out").mkdir()
    for index, values in enumerate(parameters(directory)):
        papermill.execute_notebook(
            str(RESEARCH),
            str(directory / "out" / f"{index}.ipynb"),
            parameters=values,
            progress_bar=False,
        )


def light_notebook(directory: Path) -> Path:
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 0"),
            nbformat.v4.new_code_cell("from zeroshot_kernel.batch import record\nrecord(x=x)"),
        ]
    )
    notebook.cells[0].metadata["tags"] = ["parameters"]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = directory / "light.ipynb"
    nbformat.write(notebook, path)
    return path


def start_failures() -> tuple[int, int, float]:
    """(failed items, items, seconds) for ``STARTS`` light notebooks on two workers."""
    directory = Path(tempfile.mkdtemp(prefix="zeroshot-b6-starts-"))
    try:
        notebook = light_notebook(directory)
        holder: list[Any] = []
        seconds = timed(
            lambda: holder.append(
                run_batch(
                    notebook,
                    [{"x": i} for i in range(STARTS)],
                    output_dir=directory / "out",
                    workers=WORKERS,
                    ledger=directory / "batches.db",
                    progress=False,
                    allow_outside_workspace=True,
                )
            )
        )
        status = holder[0]
        return status.count("failed"), len(status.items), seconds
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def run(repeats: int) -> Report:
    require("papermill")
    report = Report("B6", f"a batch of {NOTEBOOKS} parameterised research notebooks")
    report.versions = versions(
        ["zeroshot-workbench", "papermill", "nbclient", "ipykernel", "jupyter-client"]
    )
    samples = alternate(
        {
            "ours": in_fresh_directory(ours),
            "papermill": in_fresh_directory(sequential_papermill),
        },
        repeats,
    )
    report.table(
        ["case", "s per batch (median)", "spread (min - max)"],
        [
            [f"ours: run_batch, {WORKERS} local workers", *_cells(Summary.of(samples["ours"]))],
            [
                "papermill.execute_notebook, one after another",
                *_cells(Summary.of(samples["papermill"])),
            ],
        ],
    )
    speedup = ratios(samples["papermill"], samples["ours"])
    failed, total, seconds = start_failures()
    report.table(
        ["ratio or count", "value", "spread (min - max)", "bar", "verdict"],
        [
            [
                "speed-up: papermill time / ours",
                f"{speedup.median:.2f}",
                speedup.spread(),
                f"≥ {BAR_SPEEDUP}",
                "met"
                if speedup.median >= BAR_SPEEDUP
                else f"**missed** ({speedup.median / BAR_SPEEDUP:.2f}x the bar)",
            ],
            [
                f"failed items over {total} light notebooks ({seconds:.0f} s)",
                str(failed),
                "-",
                "0",
                "met" if failed == 0 else "**missed**",
            ],
        ],
    )
    report.notes += [
        f"{repeats} repeats, the two cases alternated; a sample is the whole batch in a fresh "
        "directory (workspaces, ledger, outputs).",
        "Each notebook runs one reviewed auto-research round on the embedded agents; ours "
        "executes each notebook in a child process of its own with a 0.25 s stagger between "
        "kernel starts and retries a kernel that fails to start.",
        f"The count row runs {STARTS} two-cell notebooks through the same local pool: an item "
        "fails only if its kernel failed to start three times or a cell failed.",
    ]
    return report


def _cells(summary: Summary) -> list[str]:
    return [f"{summary.median:.1f}", summary.spread()]
