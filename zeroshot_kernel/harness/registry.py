"""Which harness implementation serves which harness name.

The core's own harnesses are listed here; features add theirs (``git_delivery``, a third
party's) through :class:`zeroshot_kernel.features.Feature`. Every entry is imported only when
a controller first needs it, so a run that never delivers never imports git delivery, and
one on the local harness never imports httpx.
"""

from __future__ import annotations

from zeroshot_kernel.exceptions import NotFound
from zeroshot_kernel.features import contributions, resolve
from zeroshot_kernel.harness.base import Harness

_HARNESS = "zeroshot_kernel.harness"
CORE_HARNESSES: dict[str, str] = {
    "python": f"{_HARNESS}.python_harness:PythonHarness",
    "local": f"{_HARNESS}.local_harness:LocalHarness",
    "trusted": f"{_HARNESS}.trusted_harness:TrustedHarness",
    # LLM agents run through the role of their worker (see harness.roles): briefed by
    # trusted code, and settled by it where the role says so.
    "claude": f"{_HARNESS}.roles:claude_harness",
    "codex": f"{_HARNESS}.roles:codex_harness",
    "openai": f"{_HARNESS}.roles:openai_harness",
}


class HarnessUnavailable(NotFound):
    """The runtime plan names a harness this installation cannot run."""


def available_harnesses() -> dict[str, str]:
    """Harness name -> its factory (``module:attribute``), the core's and the features'."""
    return {**contributions("harnesses"), **CORE_HARNESSES}


def agent_harnesses() -> set[str]:
    """The harnesses an agent binding may name (``trusted`` and ``git_delivery`` are
    binding kinds of their own, never an agent's harness)."""
    return set(available_harnesses()) - {"trusted", "git_delivery"}


def harness_for(name: str, *, in_process: bool = False) -> Harness:
    """A fresh harness for one controller (harnesses pool processes and sessions)."""
    factory = available_harnesses().get(name)
    if factory is None:
        raise HarnessUnavailable(f"the {name} harness is not available in this installation")
    harness: Harness = resolve(factory)(in_process=in_process)
    return harness
