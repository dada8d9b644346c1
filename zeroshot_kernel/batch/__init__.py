"""Headless notebooks in batches: parameter sets, execution on a local pool or a dask
cluster, every item recorded in the ledger, and the results notebooks record.

Example::

    from zeroshot_kernel.batch import parameter_sets, run_batch
    status = run_batch("research_templates/research.ipynb",
                       parameter_sets(grid="grid.yaml"), output_dir="out", workers=2)
"""

from zeroshot_kernel.batch.parameters import ParameterError, parameter_sets
from zeroshot_kernel.batch.results import RESULT_MIME, read_results, record
from zeroshot_kernel.batch.runner import (
    OutputOutsideWorkspace,
    batch_status,
    open_store,
    output_directory,
    resume_batch,
    run_batch,
)
from zeroshot_kernel.batch.storage import BatchItem, BatchNotFound, BatchStatus, BatchStore

__all__ = [
    "RESULT_MIME",
    "BatchItem",
    "BatchNotFound",
    "BatchStatus",
    "BatchStore",
    "OutputOutsideWorkspace",
    "ParameterError",
    "batch_status",
    "open_store",
    "output_directory",
    "parameter_sets",
    "read_results",
    "record",
    "resume_batch",
    "run_batch",
]
