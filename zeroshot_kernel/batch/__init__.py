"""Headless notebooks in batches: parameter sets, execution on a local pool or a dask
cluster, every item recorded in the ledger, and the results notebooks record.

Each batch writes its executed notebooks into a folder of its own,
``<output_dir>/<batch id>/``.

Example::

    from zeroshot_kernel.batch import parameter_sets, run_batch
    status = run_batch("research_templates/research.ipynb",
                       parameter_sets(grid="grid.yaml"), output_dir="out", workers=2)
"""

from zeroshot_kernel.batch.notebooks import NotANotebook
from zeroshot_kernel.batch.outputs import OutputOutsideWorkspace, OutputUnusable, output_directory
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
