"""``RunInfo`` moved to :mod:`zeroshot_kernel.auto_research.run_info` (the Jupyter server
extension reads it without importing widgets); kept here for existing imports."""

from zeroshot_kernel.auto_research.run_info import ROUNDS_LOOP, RunInfo

__all__ = ["ROUNDS_LOOP", "RunInfo"]
