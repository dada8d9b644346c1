"""Features: the jobs built on the core, found through entry points.

The core (contract, ledger, harness, admission, engine, client) never imports a feature.
Each feature (``auto_research``, ``software_change``, or a third party's) publishes one
:class:`Feature` under the ``zeroshot_kernel.features`` entry point group, naming what it
adds by ``"module:attribute"`` references; the core imports a reference only when a run,
a template or a command needs it, so ``import zeroshot_kernel`` stays light.

A third-party package adds a harness, a template or a CLI sub-app the same way, e.g. in its
``pyproject.toml``::

    [project.entry-points."zeroshot_kernel.features"]
    my_feature = "my_package.feature:FEATURE"

>>> feature = Feature("example", templates={"hello": "example.templates:HELLO"})
>>> feature.templates["hello"]
'example.templates:HELLO'
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "zeroshot_kernel.features"


@dataclass(frozen=True)
class EmbeddedCode:
    """Python code the engine runs in a pooled, killable worker process: an embedded
    (non-LLM) agent of the ``local`` harness, or trusted code of the ``trusted`` one."""

    run: str
    """``module:function`` called in the worker with ``{"input": ..., "engine": ...}``."""
    context: str
    """``module:function(request) -> dict``: the engine context, computed in the controller
    from the run's recorded events before each call."""
    worker: str | None = None
    """Trusted code only: the worker id of the nodes it serves, and the only one."""
    release: str | None = None
    """``module:function(run_id)``, called in the controller when it ends: lets go of what
    ``context`` took for the run (auto-research holds its study). ``context`` may raise
    :class:`~zeroshot_kernel.exceptions.Refused`: the call is then a ``refusal``."""


@dataclass(frozen=True)
class Feature:
    """What one feature adds to the core; every value is a ``module:attribute`` reference."""

    name: str
    templates: Mapping[str, str] = field(default_factory=dict)
    """Template name -> a ``zeroshot_kernel.templates.Template``."""
    harnesses: Mapping[str, str] = field(default_factory=dict)
    """Harness name -> a factory called as ``factory(in_process=...)``."""
    embedded_agents: Mapping[str, EmbeddedCode] = field(default_factory=dict)
    """``local`` harness agent name (``{"kind": "agent", "agent": NAME}``) -> its code."""
    trusted_code: Mapping[str, EmbeddedCode] = field(default_factory=dict)
    """Trusted code name (``{"kind": "trusted", "code": NAME}``) -> its code (with its
    ``worker``)."""
    roles: Mapping[str, str] = field(default_factory=dict)
    """Worker id -> the role an LLM harness runs its turns through."""
    deliveries: Mapping[str, str] = field(default_factory=dict)
    """Worker id -> the async handler the ``git_delivery`` harness calls for it."""
    commands: Mapping[str, str] = field(default_factory=dict)
    """CLI sub-app name -> a ``typer.Typer``."""
    submit_guards: tuple[str, ...] = ()
    """Context managers ``guard(client, run_input)`` entered around every run's creation."""


@cache
def features() -> tuple[Feature, ...]:
    """Every installed feature, in entry-point name order. A feature that cannot be loaded
    is left out with a warning naming it, so one broken plugin does not break the rest."""
    found: list[Feature] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            loaded = point.load()
        except Exception as problem:  # a third party's import error must not stop the CLI
            warnings.warn(
                f"feature {point.name!r} ({point.value}) cannot be loaded: "
                f"{type(problem).__name__}: {problem}",
                stacklevel=2,
            )
            continue
        if not isinstance(loaded, Feature):
            warnings.warn(f"feature {point.name!r} ({point.value}) is not a Feature", stacklevel=2)
            continue
        found.append(loaded)
    return tuple(found)


def contributions(kind: str) -> dict[str, Any]:
    """One kind of contribution (``"templates"``, ``"roles"``, …) from every feature,
    merged by key; the first feature (by entry-point name) to claim a key keeps it."""
    merged: dict[str, Any] = {}
    for feature in features():
        for key, value in getattr(feature, kind).items():
            merged.setdefault(key, value)
    return merged


def submit_guards() -> list[str]:
    """Every feature's submission guards, in feature order."""
    return [guard for feature in features() for guard in feature.submit_guards]


def resolve(reference: str) -> Any:
    """The object a ``module:attribute`` reference names (importing its module)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
