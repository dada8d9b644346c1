"""zeroshot kernel: typed agent graphs, a durable ledger, auto-research.

The public API is importable from here::

    from zeroshot_kernel import Client, SucceededResult, ZeroshotError

    with Client() as client:                 # the workspace's ledger
        run = client.submit("graph.json", input={"value": 3})
        result = run.result(timeout=60)      # or: await run.aresult()
        print(run.phase, isinstance(result, SucceededResult))

Importing this package is cheap: each name is imported when first used, so
``import zeroshot_kernel`` loads neither the ledger's database driver, nor HTTP clients,
nor IPython. It is also an IPython extension (``%load_ext zeroshot_kernel``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zeroshot_kernel.builtins import BUILTIN_FEATURES as _BUILTIN_FEATURES
from zeroshot_kernel.exceptions import (
    InvalidInput,
    NotFound,
    OperationFailed,
    Refused,
    Unavailable,
    ZeroshotError,
)
from zeroshot_kernel.features import install_builtins as _install_builtins
from zeroshot_kernel.lazy_exports import load_export as _load_export

# Every process that imports any part of the package comes through here first, so the core
# finds the built-in features (which sit above it) without importing up.
_install_builtins(_BUILTIN_FEATURES)

if TYPE_CHECKING:
    from zeroshot_kernel.admission.admit import Admission
    from zeroshot_kernel.auto_research.studies.catalog import StudyError
    from zeroshot_kernel.client import (
        ActiveExecution,
        AdmissionRejected,
        Client,
        Run,
        RunHeld,
        RunStatus,
        Status,
    )
    from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
    from zeroshot_kernel.contract.graph import GraphSpec
    from zeroshot_kernel.contract.reading import DocumentError
    from zeroshot_kernel.engine.liveness import ControllerState
    from zeroshot_kernel.engine.stop import StopResult
    from zeroshot_kernel.harness.plan import RuntimePlan
    from zeroshot_kernel.ledger.errors import (
        LedgerError,
        LedgerUnavailable,
        LedgerVersionError,
        RunNotFound,
    )
    from zeroshot_kernel.ledger.events import (
        FailedResult,
        RunEvent,
        SafeLog,
        SucceededResult,
        TerminalResult,
    )
    from zeroshot_kernel.ledger.summaries import RunSummary
    from zeroshot_kernel.profiles import Profile, ProfileExists, ProfileNotFound
    from zeroshot_kernel.targets import TargetError
    from zeroshot_kernel.workers import Refusal, Verdict, WorkerContext

# Public name -> the module that defines it, imported on first use.
_LAZY: dict[str, str] = {
    "Client": "zeroshot_kernel.client",
    "Run": "zeroshot_kernel.client",
    "RunStatus": "zeroshot_kernel.client",
    "Status": "zeroshot_kernel.client",
    "ActiveExecution": "zeroshot_kernel.client",
    "AdmissionRejected": "zeroshot_kernel.client",
    "RunHeld": "zeroshot_kernel.client",
    "Admission": "zeroshot_kernel.admission.admit",
    "GraphDiagnostic": "zeroshot_kernel.contract.diagnostics",
    "GraphSpec": "zeroshot_kernel.contract.graph",
    "RuntimePlan": "zeroshot_kernel.harness.plan",
    "DocumentError": "zeroshot_kernel.contract.reading",
    "ControllerState": "zeroshot_kernel.engine.liveness",
    "StopResult": "zeroshot_kernel.engine.stop",
    "LedgerError": "zeroshot_kernel.ledger.errors",
    "LedgerUnavailable": "zeroshot_kernel.ledger.errors",
    "LedgerVersionError": "zeroshot_kernel.ledger.errors",
    "RunNotFound": "zeroshot_kernel.ledger.errors",
    "TerminalResult": "zeroshot_kernel.ledger.events",
    "SucceededResult": "zeroshot_kernel.ledger.events",
    "FailedResult": "zeroshot_kernel.ledger.events",
    "RunEvent": "zeroshot_kernel.ledger.events",
    "SafeLog": "zeroshot_kernel.ledger.events",
    "RunSummary": "zeroshot_kernel.ledger.summaries",
    "Profile": "zeroshot_kernel.profiles",
    "ProfileExists": "zeroshot_kernel.profiles",
    "ProfileNotFound": "zeroshot_kernel.profiles",
    "TargetError": "zeroshot_kernel.targets",
    "StudyError": "zeroshot_kernel.auto_research.studies.catalog",
    "WorkerContext": "zeroshot_kernel.workers",
    "Verdict": "zeroshot_kernel.workers",
    "Refusal": "zeroshot_kernel.workers",
}

__all__ = [
    "ActiveExecution",
    "Admission",
    "AdmissionRejected",
    "Client",
    "ControllerState",
    "DocumentError",
    "FailedResult",
    "GraphDiagnostic",
    "GraphSpec",
    "InvalidInput",
    "LedgerError",
    "LedgerUnavailable",
    "LedgerVersionError",
    "NotFound",
    "OperationFailed",
    "Profile",
    "ProfileExists",
    "ProfileNotFound",
    "Refusal",
    "Refused",
    "Run",
    "RunEvent",
    "RunHeld",
    "RunNotFound",
    "RunStatus",
    "RunSummary",
    "RuntimePlan",
    "SafeLog",
    "Status",
    "StopResult",
    "StudyError",
    "SucceededResult",
    "TargetError",
    "TerminalResult",
    "Unavailable",
    "Verdict",
    "WorkerContext",
    "ZeroshotError",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    return _load_export(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext zeroshot_kernel``: add the ``%zeroshot`` and ``%%zeroshot_graph`` magics."""
    from zeroshot_kernel.extension import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext zeroshot_kernel``: remove what loading added."""
    from zeroshot_kernel.extension import unload_ipython_extension as unload

    unload(ipython)
