"""zeroshot kernel.

Also an IPython extension (``%load_ext zeroshot_kernel``). The hooks import IPython only
when called, so importing the engine never imports UI or Jupyter packages.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext zeroshot_kernel``: add the ``%zeroshot`` and ``%%zeroshot_graph`` magics."""
    from zeroshot_kernel.extension import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext zeroshot_kernel``: remove what loading added."""
    from zeroshot_kernel.extension import unload_ipython_extension as unload

    unload(ipython)
