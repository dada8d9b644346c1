"""Which harness implementation serves which harness name."""

from __future__ import annotations

from zeroshot_kernel.harness.base import Harness
from zeroshot_kernel.harness.local_harness import LocalHarness
from zeroshot_kernel.harness.python_harness import PythonHarness
from zeroshot_kernel.harness.roles import RoleHarness

AVAILABLE_HARNESSES = frozenset(
    {"python", "local", "git_delivery", "trusted", "claude", "codex", "openai"}
)


class HarnessUnavailable(LookupError):
    """The runtime plan names a harness this installation cannot run."""


def harness_for(name: str, *, in_process: bool = False) -> Harness:
    """A fresh harness for one controller (harnesses pool processes and sessions)."""
    if name == "python":
        return PythonHarness(in_process=in_process)
    if name == "local":
        return LocalHarness(in_process=in_process)
    if name == "trusted":
        from zeroshot_kernel.harness.trusted_harness import TrustedHarness

        return TrustedHarness(in_process=in_process)
    if name == "git_delivery":
        from zeroshot_kernel.delivery import GitDeliveryHarness  # loaded by --push runs only

        return GitDeliveryHarness()
    # LLM agents run through the role of their worker (see harness.roles): briefed by
    # trusted code, and settled by it where the role says so.
    if name == "claude":
        from zeroshot_kernel.harness.claude_harness import ClaudeHarness

        return RoleHarness(ClaudeHarness(), tools=True)
    if name == "codex":
        from zeroshot_kernel.harness.codex_harness import CodexHarness

        return RoleHarness(CodexHarness(), tools=True)
    if name == "openai":
        from zeroshot_kernel.harness.openai_harness import OpenAIHarness  # imports httpx

        return RoleHarness(OpenAIHarness(), tools=False)
    raise HarnessUnavailable(f"the {name} harness is not available in this installation")
