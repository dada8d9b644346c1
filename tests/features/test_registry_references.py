"""Every reference the package knows resolves.

The built-in features' harnesses, templates, roles, deliveries, commands and embedded code
(the engine context and release functions are plain imports that mypy checks), every name a
bundled template binds a node to in each of its variants or an example plan names (in
``examples/``), and the names runs recorded before the built-ins were imported directly
(``fixtures/recorded_bindings.json``): a run in an existing ledger is resumed with its
recorded plan, so those names must keep resolving.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from zeroshot_kernel.builtins import BUILTIN_FEATURES
from zeroshot_kernel.features import EmbeddedCode, Feature, contributions
from zeroshot_kernel.harness.python_call import resolve
from zeroshot_kernel.templates import TemplateOptions, expand_template, templates

RECORDED = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "recorded_bindings.json").read_text()
)

_HARNESSES = ("claude", "codex", "openai")
VARIANTS = [
    # single-worker names no embedded agent: it is for an LLM harness
    *(("single-worker", TemplateOptions(task="t", harness=h)) for h in _HARNESSES),
    *(
        ("auto-research", TemplateOptions(task="t", harness=h, push=push))
        for h in ("local", *_HARNESSES)
        for push in (False, True)
    ),
    *(
        ("software-change", TemplateOptions(task="t", harness="claude", tier=t, delivery=d))
        for t in ("micro", "standard", "high-risk")
        for d in ("none", "push", "pr", "ship")
    ),
]


def _embedded_problems(kind: str, name: str, code: EmbeddedCode) -> Iterator[str]:
    try:
        resolve(code.run)  # what the worker process does with it
    except Exception as problem:
        yield f"{kind} {name}: {code.run} does not resolve ({problem})"
    if not callable(code.context) or (code.release is not None and not callable(code.release)):
        yield f"{kind} {name}: its context or release is not callable"


def problems(feature: Feature) -> list[str]:
    """What in ``feature`` cannot be loaded (each loader called, each harness made)."""
    found: list[str] = []
    loaded = {"templates": "Template", "roles": "", "deliveries": "", "commands": "Typer"}
    for kind, type_name in loaded.items():
        for key, load in getattr(feature, kind).items():
            try:
                value = load()
            except Exception as problem:
                found.append(f"{kind} {key}: {type(problem).__name__}: {problem}")
                continue
            if type_name and type(value).__name__ != type_name:
                found.append(f"{kind} {key}: a {type(value).__name__}, not a {type_name}")
    for name, factory in feature.harnesses.items():
        try:
            asyncio.run(factory(in_process=False).close())
        except Exception as problem:
            found.append(f"harness {name}: {type(problem).__name__}: {problem}")
    for name, code in feature.embedded_agents.items():
        found.extend(_embedded_problems("agent", name, code))
    for name, code in feature.trusted_code.items():
        found.extend(_embedded_problems("trusted code", name, code))
    found.extend(
        f"guard {guard!r} is not callable" for guard in feature.submit_guards if not callable(guard)
    )
    return found


def _workers(document: Any, found: dict[str, str]) -> dict[str, str]:
    """Node name -> worker id, for every step of a graph document."""
    if isinstance(document, dict):
        if isinstance(document.get("worker"), str) and "name" in document:
            found[document["name"]] = document["worker"]
        for value in document.values():
            _workers(value, found)
    elif isinstance(document, list):
        for value in document:
            _workers(value, found)
    return found


def unresolved(workers: dict[str, str], runtime: dict[str, Any]) -> list[str]:
    """The names a runtime plan binds its nodes to that this installation cannot run."""
    harnesses, agents = contributions("harnesses"), contributions("embedded_agents")
    trusted, deliveries = contributions("trusted_code"), contributions("deliveries")
    found: list[str] = []
    for node, binding in runtime["nodes"].items():
        worker = workers[node]
        kind = binding["kind"]
        harness = binding.get("harness", runtime["harness"])
        if kind == "trusted":
            code = trusted.get(binding["code"])
            if code is None or code.worker != worker:
                found.append(f"{node}: trusted code {binding['code']} for {worker}")
        elif kind == "git_delivery":
            if "git_delivery" not in harnesses or worker not in deliveries:
                found.append(f"{node}: no git delivery for {worker}")
        elif harness not in harnesses:
            found.append(f"{node}: harness {harness}")
        elif harness == "local" and binding.get("agent") not in agents:
            found.append(f"{node}: embedded agent {binding.get('agent')}")
        elif harness == "python":
            try:
                resolve(binding["callable"])
            except Exception as problem:
                found.append(f"{node}: callable {binding['callable']} ({problem})")
    return found


@pytest.mark.parametrize("feature", BUILTIN_FEATURES, ids=lambda feature: feature.name)
def test_every_built_in_contribution_loads(feature: Feature) -> None:
    assert problems(feature) == []


def test_each_harness_and_template_is_registered_once() -> None:
    for kind in ("harnesses", "templates"):
        names = [name for feature in BUILTIN_FEATURES for name in getattr(feature, kind)]
        assert len(names) == len(set(names)), kind
    assert sorted(templates()) == ["auto-research", "single-worker", "software-change"]


def _variant(value: object) -> str:
    if isinstance(value, TemplateOptions):
        return f"{value.harness}-{value.push and 'push'}-{value.tier}-{value.delivery}"
    return str(value)


@pytest.mark.parametrize(("template", "options"), VARIANTS, ids=_variant)
def test_every_name_a_bundled_template_binds_resolves(
    template: str, options: TemplateOptions
) -> None:
    expansion = expand_template(template, options)
    assert unresolved(_workers(expansion.graph, {}), expansion.runtime) == []


@pytest.mark.parametrize("plan", ["headline-runtime.json", "headline.openai.yaml"])
def test_every_name_an_example_plan_binds_resolves(
    plan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = Path(__file__).parents[2] / "examples"
    monkeypatch.syspath_prepend(str(examples.parent))  # its callables: examples.headline_workers
    graph = yaml.safe_load((examples / "headline.yaml").read_text())
    runtime = yaml.safe_load((examples / plan).read_text())  # JSON is YAML
    assert unresolved(_workers(graph, {}), runtime) == []


@pytest.mark.parametrize("label", sorted(RECORDED["runs"]))
def test_the_names_runs_recorded_before_still_resolve(label: str) -> None:
    run = RECORDED["runs"][label]
    assert unresolved(run["workers"], run["runtime"]) == []


def test_the_checks_catch_a_broken_reference() -> None:
    """The checks above can fail: a loader that cannot import, a callable that is gone."""

    def broken() -> Any:
        from zeroshot_kernel.templates import NO_SUCH_TEMPLATE  # type: ignore[attr-defined]

        return NO_SUCH_TEMPLATE

    feature = Feature(
        "broken",
        templates={"gone": broken},
        embedded_agents={"gone": EmbeddedCode("zeroshot_kernel.workers:no_such_agent", dict)},
    )
    assert [problem.split(":")[0] for problem in problems(feature)] == [
        "templates gone",
        "agent gone",
    ]
    plan = {
        "harness": "python",
        "nodes": {"a": {"kind": "agent", "callable": "zeroshot_kernel.workers:gone"}},
    }
    assert unresolved({"a": "w@1"}, plan) == [
        "a: callable zeroshot_kernel.workers:gone "
        "(module 'zeroshot_kernel.workers' has no attribute 'gone')"
    ]
