"""Every error zeroshot raises on purpose, under one root.

Catch :class:`ZeroshotError` to handle anything the workbench refuses or fails at; catch a
family to handle one kind of problem. Each family also keeps the built-in base callers
already catch, so ``except ValueError`` around bad input keeps working:

- :class:`InvalidInput` (a ``ValueError``): input the caller can fix, such as a graph that is
  not admitted, a bad parameter, a malformed task or target.
- :class:`NotFound` (a ``LookupError``): a named thing (profile, batch, worker, harness)
  does not exist.
- :class:`Unavailable` (a ``RuntimeError``): something needed is missing or unreachable.
- :class:`Refused` (a ``RuntimeError``): a trust or safety rule refused the action.
- :class:`OperationFailed` (a ``RuntimeError``): an outside operation (git, GitHub, an
  experiment, a classifier) ran and failed.

Errors of the ledger derive from ``zeroshot_kernel.ledger.LedgerError``, itself a
``ZeroshotError``. This module imports nothing from the package, so every layer may use it.

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
    """A trust or safety rule refused the action; nothing it guards was done."""


class OperationFailed(ZeroshotError, RuntimeError):
    """An outside operation (git, GitHub, an experiment, a classifier) ran and failed."""
