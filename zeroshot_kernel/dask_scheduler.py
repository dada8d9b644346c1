"""The dask.distributed scheduler a batch or a study's experiments run on: its address
checked before anything is recorded, and one that cannot be reached said in one line.

dask parses an address only when it connects, so a typo (``tcp://host``, ``host:port8786``)
would otherwise surface as a ``ValueError`` deep in the client after the batch was
recorded; :func:`check_address` parses it the way dask will, without connecting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from zeroshot_kernel.contract.reading import shorten
from zeroshot_kernel.exceptions import InvalidInput

if TYPE_CHECKING:
    from distributed import Client

MAX_PORT = 65535


class SchedulerUnusable(InvalidInput):
    """A scheduler address that is malformed, or names no scheduler that answers."""


def check_address(address: str) -> str:
    """``address`` when dask could connect to it (``tcp://host:8786``, ``host:8786``,
    ``tls://...``); raises :class:`SchedulerUnusable` saying what is wrong."""
    from distributed.comm.addressing import get_address_host_port

    try:
        _, port = get_address_host_port(address)
    except ValueError as problem:
        raise SchedulerUnusable(_problem(address, str(problem))) from None
    if not 0 < port <= MAX_PORT:
        raise SchedulerUnusable(_problem(address, f"port {port} is not 1-{MAX_PORT}"))
    return address


def connect(address: str) -> Client:
    """A client of the scheduler at ``address`` (checked first); the caller closes it."""
    from distributed import Client

    check_address(address)
    try:
        return Client(address)  # type: ignore[no-untyped-call]
    except (OSError, ValueError) as problem:  # unreachable, timed out, refused
        raise SchedulerUnusable(_problem(address, f"cannot connect: {problem}")) from None


@contextlib.contextmanager
def connected(address: str) -> Iterator[Client]:
    """A client of the scheduler at ``address`` (checked first), closed after."""
    with connect(address) as client:
        yield client


def _problem(address: str, why: str) -> str:
    reason = (why.strip().splitlines() or ["unusable"])[0]
    return f"--dask {shorten(address)}: {shorten(reason)}"
