"""The embedded local research agents (no LLM): scouts, a researcher and a reviewer.

Plain functions over the typed payloads of :mod:`zeroshot_kernel.research.protocol`,
deterministic given the records and the seed in their input.
"""

from zeroshot_kernel.research.agents.researcher_agent import researcher
from zeroshot_kernel.research.agents.reviewer_agent import reviewer
from zeroshot_kernel.research.agents.scout_agent import scout

__all__ = ["researcher", "reviewer", "scout"]
