"""Where the kernels of executed notebooks listen."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traitlets.config import Config


@contextmanager
def private_kernels() -> Iterator[Config]:
    """Configuration for the kernels papermill starts here: their channels are Unix sockets
    in a fresh folder only this user can open, not TCP ports on localhost that any local
    process can connect to (ipykernel warns about those at every start, in the middle of a
    command's output). The folder and its sockets are removed when the block ends.

    Pass it on as ``papermill.execute_notebook(..., config=config)``:

    >>> with private_kernels() as config:
    ...     config.KernelManager.transport
    'ipc'
    """
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="zeroshot-kernel-") as folder:
        yield Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "kernel")}})
