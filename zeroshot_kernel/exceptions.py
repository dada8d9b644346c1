"""Every error zeroshot raises on purpose, under one root.

Catch :class:`ZeroshotError` to handle anything the workbench refuses or fails at; catch a
family to handle one kind of problem. Each family also keeps the built-in base callers
already catch, so ``except ValueError`` around bad input keeps working:

- :class:`InvalidInput` (a ``ValueError``): input the caller can fix, such as a graph that is
  not admitted, a bad parameter, a malformed task or target.
- :class:`NotFound` (a ``LookupError``): a named thing (profile, batch, worker, harness)
  does not exist.
- :class:`Unavailable` (a ``RuntimeError``): something needed is missing or unreachable.
- :class:`Refused` (a ``RuntimeError``): a rule (trust, safety, a lock, a run's history)
  refused the action.
- :class:`OperationFailed` (a ``RuntimeError``): an outside operation (git, GitHub, an
  experiment, a classifier) ran and failed.

Every exception class of the package sits in one family, never on the root directly; the
ledger's also derive from ``zeroshot_kernel.ledger.LedgerError``, a marker (never raised
itself) for callers that name the ledger as the problem whatever its kind. This module
imports nothing from the package, so every layer may use it.

The whole tree, each class with its module under ``zeroshot_kernel`` (``+`` names its other
direct bases; ``tests/project/test_error_tree.py`` checks it against the code)::

    ZeroshotError                                       exceptions
      InvalidInput + ValueError                         exceptions
        DiffError                                       auto_research.diffs
        RestoreError                                    auto_research.restore
        StudyError                                      auto_research.studies.catalog
        TaskError                                       auto_research.task
          NoSearchSpace                                 auto_research.task
        NotANotebook                                    batch.notebooks
        OutputOutsideWorkspace                          batch.outputs
        OutputUnusable                                  batch.outputs
        ParameterError                                  batch.parameters
        AdmissionRejected                               client
        CanonicalError                                  contract.canonical
        DocumentError                                   contract.reading
          RegistryFileError                             admission.worker_registry
          DocumentUnreadable                            contract.reading
        WorkerContractViolation                         contract.worker_descriptors
        SchedulerUnusable                               dask_scheduler
        ReducerError                                    engine.reducer_errors
          HistoryMismatch                               engine.reducer_errors
          NoChoiceRoute                                 engine.reducer_errors
          PayloadTypeError                              engine.reducer_errors
        BadInput                                        lab_server.inputs
        CursorAhead + LedgerError                       ledger.errors
        IdempotencyConflict + LedgerError               ledger.errors
        InvalidArgument + LedgerError                   ledger.errors
        InvalidCursor + LedgerError                     ledger.errors
        PayloadRejected + LedgerError                   ledger.errors
        ProfileExists                                   profiles
        FileRefused                                     safe_files
        LifecycleRefused                                software_change.review.lifecycle
        TargetError                                     targets
        LedgerPathError                                 workspace
      NotFound + LookupError                            exceptions
        RegistryError                                   admission.worker_registry
          InvalidWorkerDescriptor                       admission.worker_registry
          WorkerNotFound                                admission.worker_registry
          WorkerVersionUnavailable                      admission.worker_registry
        CandidateNotFound                               auto_research.candidate_detail
        BatchNotFound                                   batch.storage
        HarnessUnavailable                              harness.registry
        UnknownStudy                                    lab_server.study_payloads
        RunNotFound + LedgerError                       ledger.errors
        ProfileNotFound                                 profiles
      Unavailable + RuntimeError                        exceptions
        LeaseLost                                       engine.controller
        LeaseUnavailable                                engine.controller
        CliMissing + FileNotFoundError                  harness.agent_cli
        LedgerUnavailable + LedgerError                 ledger.errors
        LedgerVersionError + LedgerError                ledger.errors
        RetriesExhausted                                retry
        SandboxUnavailable                              sandbox.bwrap
      Refused + RuntimeError                            exceptions
        AdoptionRefused                                 auto_research.adoption
        LockUnusable                                    auto_research.lock_files
        StudyBusy                                       auto_research.studies.run_lock
        RunHeld                                         client
        DeliveryRefused                                 delivery.worktree
        RoleError                                       harness.roles
          SecretInChange                                software_change.review.briefs
        NotContinuable                                  lab_server.actions
        Refusal                                         lab_server.handlers
        OutsideRoot + PermissionError                   lab_server.workspaces
        EventRejected + LedgerError                     ledger.errors
        LeaseNotHeld + LedgerError                      ledger.errors
        SnapshotError                                   software_change.snapshot
        TrustError                                      software_change.trust
        Refusal                                         workers
      OperationFailed + RuntimeError                    exceptions
        ExperimentsLost                                 auto_research.executor
        BaselineFailed                                  auto_research.measure
        CandidateChanged                                auto_research.measure
        GitError                                        delivery.git
        GitHubError                                     delivery.github
        ClassificationFailed                            software_change.review.classify
      LedgerError                                       ledger.errors

Outside the tree: ``engine.controller.Interrupted``, the controller's own control flow (it
unwinds the loop on a signal and never leaves the controller).

Example::

    from zeroshot_kernel import Client, InvalidInput, ZeroshotError

    try:
        Client().submit("graph.json", input={})
    except InvalidInput as problem:    # also a ValueError
        print("fix the submission:", problem)
    except ZeroshotError as problem:
        print("zeroshot refused:", problem)
"""

from __future__ import annotations

__all__ = ["InvalidInput", "NotFound", "OperationFailed", "Refused", "Unavailable", "ZeroshotError"]


class ZeroshotError(Exception):
    """The root of every error the workbench raises on purpose."""


class InvalidInput(ZeroshotError, ValueError):
    """Input the caller can fix: a rejected submission, a bad document, parameter or name."""


class NotFound(ZeroshotError, LookupError):
    """A named thing (profile, batch, worker, harness) does not exist."""


class Unavailable(ZeroshotError, RuntimeError):
    """Something the operation needs is missing or unreachable."""


class Refused(ZeroshotError, RuntimeError):
    """A rule (trust, safety, a lock, a run's history) refused the action; nothing it guards
    was done."""


class OperationFailed(ZeroshotError, RuntimeError):
    """An outside operation (git, GitHub, an experiment, a classifier) ran and failed."""
