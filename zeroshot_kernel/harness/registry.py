"""Which harness implementation serves which harness name.

The harnesses are contributions of the installed features: the built-in ones, imported
directly (:mod:`zeroshot_kernel.builtins`, where the core's own harnesses are listed), and
third-party plugins, found through the ``zeroshot_kernel.features`` entry-point group
(:mod:`zeroshot_kernel.features` shows one). Each factory imports its module only when a
controller first needs it, so a run that never delivers never imports git delivery, and
one on the local harness never imports httpx.
"""

from __future__ import annotations

from collections.abc import Callable

from zeroshot_kernel.exceptions import NotFound
from zeroshot_kernel.features import contributions
from zeroshot_kernel.harness.base import Harness

HarnessFactory = Callable[..., Harness]
"""Called as ``factory(in_process=...)`` for a fresh harness."""


class HarnessUnavailable(NotFound):
    """The runtime plan names a harness this installation cannot run."""


def available_harnesses() -> dict[str, HarnessFactory]:
    """Harness name -> its factory, as the installed features register them."""
    return contributions("harnesses")


def agent_harnesses() -> set[str]:
    """The harnesses an agent binding may name (``trusted`` and ``git_delivery`` are
    binding kinds of their own, never an agent's harness)."""
    return set(available_harnesses()) - {"trusted", "git_delivery"}


def harness_for(name: str, *, in_process: bool = False) -> Harness:
    """A fresh harness for one controller (harnesses pool processes and sessions)."""
    factory = available_harnesses().get(name)
    if factory is None:
        raise HarnessUnavailable(f"the {name} harness is not available in this installation")
    harness: Harness = factory(in_process=in_process)
    return harness
