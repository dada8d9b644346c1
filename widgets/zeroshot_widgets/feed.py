"""``RunFeed`` and ``Poll`` moved to :mod:`zeroshot_kernel.auto_research.run_feed` (the
Jupyter server extension reads runs through them without importing widgets); kept here
for existing imports."""

from zeroshot_kernel.auto_research.run_feed import TAIL_LINES, Poll, RunFeed

__all__ = ["TAIL_LINES", "Poll", "RunFeed"]
