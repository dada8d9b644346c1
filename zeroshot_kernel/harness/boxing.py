"""Which plans need the box before anything starts.

An agent CLI (``claude``, ``codex``) runs tools, so what its model writes runs as soon as
the run starts: a plan binding one is refused at submission, in one line saying how to get
a box, when none can be made here and the user did not choose ``--sandbox none``. Other
model-written code (a software change's checks, a code task's experiments) is refused by
the feature that runs it, at submission where it can tell and at the step otherwise.
"""

from __future__ import annotations

from zeroshot_kernel import sandbox
from zeroshot_kernel.harness.plan import RuntimePlan

CLI_HARNESSES = frozenset({"claude", "codex"})


def runs_agent_clis(plan: RuntimePlan) -> bool:
    return plan.harness in CLI_HARNESSES or any(
        plan.harness_of(node) in CLI_HARNESSES for node in plan.nodes
    )


def require_box(plan: RuntimePlan) -> None:
    """Raise :class:`~zeroshot_kernel.sandbox.SandboxUnavailable` when ``plan`` runs agent
    CLIs in a box and no box can be made here."""
    if plan.sandbox_mode != "none" and runs_agent_clis(plan):
        sandbox.require()
