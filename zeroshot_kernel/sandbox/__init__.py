"""The box model-written code runs in (``../shared/design/containment.md``).

Agent CLI processes and their tools, declared checks and research experiments run under
bubblewrap: a read-only root, only their own folder writable, no ledger, no credentials, no
network (an agent CLI reaches its model API's hosts through an allow-list proxy,
:mod:`zeroshot_kernel.sandbox.egress`), and nothing left alive after their step. Trusted code
describes the box (:func:`folder_policy`), opens it (:meth:`Box.open`) and runs the process
through it; ``--sandbox none`` runs the same processes uncontained, and says so.
"""

from zeroshot_kernel.sandbox.box import Box, Containment, folder_policy, user_root
from zeroshot_kernel.sandbox.bwrap import INSTALL_HINT, SandboxUnavailable, problem, require
from zeroshot_kernel.sandbox.policy import (
    DEFAULT_MODE,
    SANDBOX_MODES,
    UNCONTAINED,
    BoxPolicy,
    Limits,
    SandboxMode,
    box_env,
    sandbox_mode,
)

__all__ = [
    "DEFAULT_MODE",
    "INSTALL_HINT",
    "SANDBOX_MODES",
    "UNCONTAINED",
    "Box",
    "BoxPolicy",
    "Containment",
    "Limits",
    "SandboxMode",
    "SandboxUnavailable",
    "box_env",
    "folder_policy",
    "problem",
    "require",
    "sandbox_mode",
    "user_root",
]
