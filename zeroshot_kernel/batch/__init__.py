"""Headless notebooks in batches: parameter sets, execution on a local pool or a dask
cluster, every item recorded in the ledger, and the results notebooks record.

Each batch writes its executed notebooks into a folder of its own,
``<output_dir>/<batch id>/``.

Example::

    from zeroshot_kernel.batch import parameter_sets, run_batch
    status = run_batch("research_templates/research.ipynb",
                       parameter_sets(grid="grid.yaml"), output_dir="out", workers=2)
"""

from typing import TYPE_CHECKING, Any

from zeroshot_kernel.lazy_exports import load_export as _load_export

if TYPE_CHECKING:
    from zeroshot_kernel.batch.notebooks import NotANotebook
    from zeroshot_kernel.batch.outputs import (
        OutputOutsideWorkspace,
        OutputUnusable,
        output_directory,
    )
    from zeroshot_kernel.batch.parameters import ParameterError, parameter_sets
    from zeroshot_kernel.batch.results import RESULT_MIME, read_results, record
    from zeroshot_kernel.batch.runner import (
        batch_status,
        create_batch,
        open_store,
        resume_batch,
        run_batch,
    )
    from zeroshot_kernel.batch.storage import BatchItem, BatchNotFound, BatchStatus, BatchStore
    from zeroshot_kernel.dask_scheduler import SchedulerUnusable

# Public name -> the module that defines it, imported on first use (an item's process
# imports only what executing a notebook needs).
_LAZY: dict[str, str] = {
    "NotANotebook": "zeroshot_kernel.batch.notebooks",
    "OutputOutsideWorkspace": "zeroshot_kernel.batch.outputs",
    "OutputUnusable": "zeroshot_kernel.batch.outputs",
    "output_directory": "zeroshot_kernel.batch.outputs",
    "ParameterError": "zeroshot_kernel.batch.parameters",
    "parameter_sets": "zeroshot_kernel.batch.parameters",
    "RESULT_MIME": "zeroshot_kernel.batch.results",
    "read_results": "zeroshot_kernel.batch.results",
    "record": "zeroshot_kernel.batch.results",
    "batch_status": "zeroshot_kernel.batch.runner",
    "create_batch": "zeroshot_kernel.batch.runner",
    "open_store": "zeroshot_kernel.batch.runner",
    "resume_batch": "zeroshot_kernel.batch.runner",
    "run_batch": "zeroshot_kernel.batch.runner",
    "BatchItem": "zeroshot_kernel.batch.storage",
    "BatchNotFound": "zeroshot_kernel.batch.storage",
    "BatchStatus": "zeroshot_kernel.batch.storage",
    "BatchStore": "zeroshot_kernel.batch.storage",
    "SchedulerUnusable": "zeroshot_kernel.dask_scheduler",
}

__all__ = [
    "RESULT_MIME",
    "BatchItem",
    "BatchNotFound",
    "BatchStatus",
    "BatchStore",
    "NotANotebook",
    "OutputOutsideWorkspace",
    "OutputUnusable",
    "ParameterError",
    "SchedulerUnusable",
    "batch_status",
    "create_batch",
    "open_store",
    "output_directory",
    "parameter_sets",
    "read_results",
    "record",
    "resume_batch",
    "run_batch",
]


def __getattr__(name: str) -> Any:
    return _load_export(globals(), _LAZY, name)
