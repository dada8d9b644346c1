"""The built-in features, imported directly: the one table of the harnesses and templates
the package ships, and of what auto-research and software change add to the core.

It sits above every feature (see the layers in ``pyproject.toml``), so the import contract
and mypy see each arrow; the package installs :data:`BUILTIN_FEATURES` into
:mod:`zeroshot_kernel.features` when first imported, which is how the core, below, finds
them without importing up. Every factory and loader imports its module on first use only.
Third parties use entry points instead (see :mod:`zeroshot_kernel.features`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zeroshot_kernel.auto_research.feature import FEATURE as AUTO_RESEARCH
from zeroshot_kernel.features import Feature
from zeroshot_kernel.software_change.feature import FEATURE as SOFTWARE_CHANGE

if TYPE_CHECKING:
    from zeroshot_kernel.harness.base import Harness
    from zeroshot_kernel.templates import Template


def _python(*, in_process: bool = False) -> Harness:
    from zeroshot_kernel.harness.python_harness import PythonHarness

    return PythonHarness(in_process=in_process)


def _local(*, in_process: bool = False) -> Harness:
    from zeroshot_kernel.harness.local_harness import LocalHarness

    return LocalHarness(in_process=in_process)


def _trusted(*, in_process: bool = False) -> Harness:
    from zeroshot_kernel.harness.trusted_harness import TrustedHarness

    return TrustedHarness(in_process=in_process)


def _claude(*, in_process: bool = False) -> Harness:
    from zeroshot_kernel.harness.roles import claude_harness

    return claude_harness(in_process=in_process)


def _codex(*, in_process: bool = False) -> Harness:
    from zeroshot_kernel.harness.roles import codex_harness

    return codex_harness(in_process=in_process)


def _openai(*, in_process: bool = False) -> Harness:
    from zeroshot_kernel.harness.roles import openai_harness

    return openai_harness(in_process=in_process)


def _git_delivery(*, in_process: bool = False) -> Harness:
    """The one ``git_delivery`` harness; both features' delivery nodes run on it."""
    from zeroshot_kernel.delivery.harness import GitDeliveryHarness

    return GitDeliveryHarness(in_process=in_process)


def _single_worker() -> Template:
    from zeroshot_kernel.templates import SINGLE_WORKER

    return SINGLE_WORKER


CORE = Feature(
    "core",
    templates={"single-worker": _single_worker},
    harnesses={
        "python": _python,
        "local": _local,
        "trusted": _trusted,
        # LLM agents run through the role of their worker (see harness.roles): briefed by
        # trusted code, and settled by it where the role says so.
        "claude": _claude,
        "codex": _codex,
        "openai": _openai,
        "git_delivery": _git_delivery,
    },
)

BUILTIN_FEATURES: tuple[Feature, ...] = (CORE, AUTO_RESEARCH, SOFTWARE_CHANGE)
