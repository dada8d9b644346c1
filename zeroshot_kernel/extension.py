"""The IPython extension: ``%load_ext zeroshot_kernel`` adds the zeroshot magics.

Loading twice changes nothing (``%reload_ext`` and config-enabled extensions may load
again); unloading removes exactly the magics loading added and stops the pollers of the
widgets they showed. Enable it for every kernel with
``c.InteractiveShellApp.extensions = ["zeroshot_kernel"]``.

Example::

    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    load_ipython_extension(shell)
    shell.run_line_magic("zeroshot", "templates")
"""

from __future__ import annotations

from typing import Any

from zeroshot_kernel.magics import ZeroshotMagics

_REGISTRY_KEY = ZeroshotMagics.__name__


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics once per shell."""
    if _REGISTRY_KEY in ipython.magics_manager.registry:
        return
    ipython.register_magics(ZeroshotMagics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics this extension registered (and only those)."""
    manager = ipython.magics_manager
    magics = manager.registry.pop(_REGISTRY_KEY, None)
    if not isinstance(magics, ZeroshotMagics):
        return
    magics.close()
    for kind, names in magics.magics.items():
        registered = manager.magics[kind]
        for name in names:
            if getattr(registered.get(name), "__self__", None) is magics:
                del registered[name]
