"""Package names imported on first use (PEP 562), so importing a package stays cheap.

A package keeps a table of each exported name's home module and forwards its module-level
``__getattr__`` here::

    def __getattr__(name: str) -> Any:
        return load_export(globals(), _HOMES, name)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any


def load_export(namespace: MutableMapping[str, Any], homes: Mapping[str, str], name: str) -> Any:
    """``name`` imported from its home module and kept in ``namespace``, so later lookups
    never reach the package's ``__getattr__`` again."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    namespace[name] = value
    return value
