"""Headless notebooks: the results they record, for batches and reports to read back."""

from zeroshot_kernel.batch.results import RESULT_MIME, read_results, record

__all__ = ["RESULT_MIME", "read_results", "record"]
