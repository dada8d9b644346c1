"""The embedded local research agents (no LLM): scouts, a researcher and a reviewer.

Plain functions over the typed payloads of :mod:`zeroshot_kernel.auto_research.protocol`,
deterministic given the records and the seed in their input. They search a task's
parameters only: the scouts and the researcher raise :class:`NoSearchSpace` (a one-line
reason) on a task without a search space; the reviewer, which judges recorded evidence,
works on any task.
"""

from zeroshot_kernel.auto_research.agents.researcher_agent import researcher
from zeroshot_kernel.auto_research.agents.reviewer_agent import reviewer
from zeroshot_kernel.auto_research.agents.scout_agent import scout
from zeroshot_kernel.auto_research.task import NoSearchSpace

__all__ = ["NoSearchSpace", "researcher", "reviewer", "scout"]
