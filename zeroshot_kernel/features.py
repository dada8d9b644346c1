"""Features: the jobs built on the core, and the plugins of third parties.

The core (contract, ledger, harness, admission, engine, client) never imports a feature: it
asks this module for what the installed features add. Each feature publishes one
:class:`Feature` whose values are *loaders*, zero-argument functions that import their
module when first called (a harness is its factory), so ``import zeroshot_kernel`` stays
light and a run that never delivers never imports git delivery.

The built-in features (``core``: the core's harnesses and ``single-worker`` template, with
the one ``git_delivery`` harness; ``auto_research``; ``software_change``) are imported
directly by :mod:`zeroshot_kernel.builtins`, which the package installs here
(:func:`install_builtins`) when it is first imported. Entry points are for third parties
only: a package adds a template, a harness, a CLI sub-app, roles or embedded agents by
naming its ``Feature`` under the ``zeroshot_kernel.features`` group, e.g. in its
``pyproject.toml``::

    [project.entry-points."zeroshot_kernel.features"]
    acme = "acme_feature:FEATURE"

with, in ``acme_feature.py``::

    FEATURE = Feature(
        "acme",
        templates={"shout-once": lambda: TEMPLATE},  # a zeroshot_kernel.templates.Template
        harnesses={"shout": ShoutHarness},  # called as ShoutHarness(in_process=...)
        commands={"acme": lambda: app},  # a typer.Typer, as `zeroshot acme ...`
    )

A plugin that cannot be loaded, is not a ``Feature``, names a template, harness, command,
role, agent or trusted code the built-ins (or an earlier plugin) already have, or whose
template, role, delivery or command loader fails, is left out with a warning that says why;
the rest works.

>>> feature = Feature("example", templates={"hello": lambda: "a template"})
>>> feature.templates["hello"]()
'a template'
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "zeroshot_kernel.features"

Loader = Callable[[], Any]
"""A zero-argument function returning the contributed object (importing its module)."""


@dataclass(frozen=True)
class EmbeddedCode:
    """Python code the engine runs in a pooled, killable worker process: an embedded
    (non-LLM) agent of the ``local`` harness, or trusted code of the ``trusted`` one."""

    run: str
    """``module:function`` called in the worker with ``{"input": ..., "engine": ...}`` (a
    reference, not an object: the worker process imports it, as the ``python`` harness
    does a binding's ``callable``)."""
    context: Callable[[Any], dict[str, Any]]
    """``context(request) -> dict``: the engine context, computed in the controller from the
    run's recorded events before each call. It may raise
    :class:`~zeroshot_kernel.exceptions.Refused`: the call is then a ``refusal``."""
    worker: str | None = None
    """Trusted code only: the worker id of the nodes it serves, and the only one."""
    release: Callable[[str], None] | None = None
    """``release(run_id)``, called in the controller when it ends: lets go of what
    ``context`` took for the run (auto-research holds its study)."""


@dataclass(frozen=True)
class Feature:
    """What one feature adds to the core; every value but the harness factories and the
    embedded code is a :data:`Loader`."""

    name: str
    templates: Mapping[str, Loader] = field(default_factory=dict)
    """Template name -> a loader of a ``zeroshot_kernel.templates.Template``."""
    harnesses: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Harness name -> a factory called as ``factory(in_process=...)``."""
    embedded_agents: Mapping[str, EmbeddedCode] = field(default_factory=dict)
    """``local`` harness agent name (``{"kind": "agent", "agent": NAME}``) -> its code."""
    trusted_code: Mapping[str, EmbeddedCode] = field(default_factory=dict)
    """Trusted code name (``{"kind": "trusted", "code": NAME}``) -> its code (with its
    ``worker``)."""
    roles: Mapping[str, Loader] = field(default_factory=dict)
    """Worker id -> a loader of the role an LLM harness runs its turns through."""
    deliveries: Mapping[str, Loader] = field(default_factory=dict)
    """Worker id -> a loader of the async handler the ``git_delivery`` harness calls."""
    commands: Mapping[str, Loader] = field(default_factory=dict)
    """CLI sub-app name -> a loader of a ``typer.Typer``."""
    submit_guards: tuple[Callable[..., Any], ...] = ()
    """Context managers ``guard(client, run_input)`` entered around every run's creation."""


_NAMED = (
    "templates",
    "harnesses",
    "embedded_agents",
    "trusted_code",
    "roles",
    "deliveries",
    "commands",
)
"""The contributions whose names no two features may share."""
_LOADED = ("templates", "roles", "deliveries", "commands")
"""A plugin's loaders of these kinds are called when it joins, so that a broken one refuses
the plugin at once instead of failing a command or a run later."""

_builtins: tuple[Feature, ...] = ()


def install_builtins(builtins: tuple[Feature, ...]) -> None:
    """Make ``builtins`` the features every lookup starts with (called by the package)."""
    global _builtins
    _builtins = builtins


@cache
def features() -> tuple[Feature, ...]:
    """The built-in features, then every plugin that loads and claims no name already
    taken (in entry-point name order); one left out is named in a warning."""
    from importlib.metadata import entry_points  # only when asked: it is slow to import

    found = list(_builtins)
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        plugin = _plugin(point, found)
        if isinstance(plugin, Feature):
            found.append(plugin)
        else:
            warnings.warn(f"plugin {point.name!r} ({point.value}) {plugin}", stacklevel=2)
    return tuple(found)


def _plugin(point: EntryPoint, taken: list[Feature]) -> Feature | str:
    """The feature ``point`` names, or why it cannot join ``taken``."""
    try:
        loaded = point.load()
    except Exception as problem:  # a third party's import error must not stop the CLI
        return f"cannot be loaded: {type(problem).__name__}: {problem}"
    if not isinstance(loaded, Feature):
        return f"is not a zeroshot_kernel.features.Feature but a {type(loaded).__name__}"
    for kind in _NAMED:
        for feature in taken:
            clash = sorted(set(getattr(loaded, kind)) & set(getattr(feature, kind)))
            if clash:
                return (
                    f"is refused: its {kind.replace('_', ' ')} {', '.join(clash)} "
                    f"already belong to the {feature.name} feature"
                )
    for kind in _LOADED:
        for key, load in getattr(loaded, kind).items():
            try:
                load()
            except Exception as problem:  # the plugin is refused here, not mid-run
                return f"is refused: its {kind[:-1]} {key!r} cannot be loaded: {problem}"
    return loaded


def contributions(kind: str) -> dict[str, Any]:
    """One kind of contribution (``"templates"``, ``"roles"``, …) from every feature,
    merged by key (no two features share a key: :func:`features` refuses the second)."""
    return {key: value for feature in features() for key, value in getattr(feature, kind).items()}


def submit_guards() -> list[Callable[..., Any]]:
    """Every feature's submission guards, in feature order."""
    return [guard for feature in features() for guard in feature.submit_guards]
