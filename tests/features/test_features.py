"""Third parties plug into zeroshot through entry points; the built-ins are imported directly.

Small plugin projects are built and installed by a real ``pip install`` (offline: hatchling
from this environment) into a folder put on ``PYTHONPATH``: one adds a template, a harness
and a CLI sub-app, which the real ``zeroshot`` command and the detached controller it starts
find; the others collide with a built-in or are broken, and are refused in one line each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from zeroshot_kernel.features import ENTRY_POINT_GROUP, features

# slow: pip installs plugin distributions
pytestmark = pytest.mark.slow

PLUGIN = textwrap.dedent('''
    """A third-party feature: one template, one harness, one command."""
    import typer

    from zeroshot_kernel.contract.outcome import VerifiedOutcome
    from zeroshot_kernel.features import Feature
    from zeroshot_kernel.harness.base import HarnessResult
    from zeroshot_kernel.templates import Expansion, Template, TemplateOptions
    from zeroshot_kernel.templates.single_worker import single_worker_graph


    class ShoutHarness:
        """Answers every execution itself (a stand-in for an agent service)."""

        def __init__(self, *, in_process=False):
            pass

        async def execute(self, request):
            request.log("output", "shouting " + str(request.input["task"]).upper())
            return HarnessResult(VerifiedOutcome(status="verified", output=None))

        async def close(self):
            pass


    def expand(options: TemplateOptions) -> Expansion:
        return Expansion(graph=single_worker_graph(), input={"task": options.task},
                         runtime={"harness": "shout", "nodes": {"worker": {"kind": "agent"}}})


    TEMPLATE = Template("shout-once", "One shout.", expand)
    app = typer.Typer(help="Acme commands.")


    @app.command()
    def hello() -> None:
        """Say hello."""
        typer.echo("hello from acme")


    FEATURE = Feature("acme", templates={"shout-once": lambda: TEMPLATE},
                      harnesses={"shout": ShoutHarness}, commands={"acme": lambda: app})
''')

CLASH = textwrap.dedent("""
    from zeroshot_kernel.features import Feature

    FEATURE = Feature("clash", harnesses={"python": object})
""")

BROKEN_LOADER = textwrap.dedent("""
    from zeroshot_kernel.features import Feature


    def template():
        import acme_templates_gone

        return acme_templates_gone.TEMPLATE


    FEATURE = Feature("half", templates={"half-done": template})
""")

PYPROJECT = """
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "1.0"

[project.entry-points."zeroshot_kernel.features"]
{entry}

[tool.hatch.build.targets.wheel]
only-include = ["{name}.py"]
"""

PLUGINS = {
    "acme_feature": ("acme = 'acme_feature:FEATURE'", PLUGIN),
    "clash_feature": ("clash = 'clash_feature:FEATURE'", CLASH),
    "half_feature": ("half = 'half_feature:FEATURE'", BROKEN_LOADER),
    # the entry point names a module the project does not ship
    "broken_feature": ("broken = 'broken_feature_missing:FEATURE'", "FEATURE = None\n"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugins, each a project built and installed by pip into one target folder."""
    root = tmp_path_factory.mktemp("plugins")
    for name, (entry, module) in PLUGINS.items():
        (root / name).mkdir()
        (root / name / "pyproject.toml").write_text(PYPROJECT.format(name=name, entry=entry))
        (root / name / f"{name}.py").write_text(module)
    site = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation"]
    installed = subprocess.run(
        [*pip, "--no-deps", "--quiet", "--target", str(site), *(str(root / n) for n in PLUGINS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    return site


def zeroshot(workspace: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("ZEROSHOT_LEDGER", None)
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", *args],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_pip_installed_each_plugin_with_its_entry_point(site: Path) -> None:
    for name, (entry, _) in PLUGINS.items():
        points = (site / f"{name}-1.0.dist-info" / "entry_points.txt").read_text()
        assert "[zeroshot_kernel.features]" in points
        assert entry.split("'")[1] in points
        assert (site / f"{name}.py").is_file()


def test_the_built_in_features_are_no_entry_points() -> None:
    assert [feature.name for feature in features()] == ["core", "auto_research", "software_change"]
    ours = [p for p in entry_points(group=ENTRY_POINT_GROUP) if p.value.startswith("zeroshot_")]
    assert ours == []


def test_a_plugin_adds_a_template_a_harness_and_a_command(tmp_path: Path, site: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    listed = zeroshot(workspace, site, "template", "list")
    assert listed.returncode == 0, listed.stderr
    assert "shout-once" in listed.stdout and "auto-research" in listed.stdout

    hello = zeroshot(workspace, site, "acme", "hello")
    assert (hello.returncode, hello.stdout.strip()) == (0, "hello from acme")

    shown = zeroshot(workspace, site, "template", "show", "shout-once", "--task", "hi", "--json")
    assert shown.returncode == 0, shown.stderr
    expansion = json.loads(shown.stdout)
    (workspace / "graph.json").write_text(json.dumps(expansion["graph"]))
    (workspace / "plan.json").write_text(json.dumps(expansion["runtime"]))
    # The detached controller is another process: it finds the harness the same way.
    ran = zeroshot(
        workspace, site, "run", "graph.json", "--input", '{"task": "hi"}', "--runtime", "@plan.json"
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "shouting HI" in ran.stdout
    assert "succeeded" in ran.stdout


def test_colliding_and_broken_plugins_are_refused_in_words(tmp_path: Path, site: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    listed = zeroshot(workspace, site, "template", "list")
    assert listed.returncode == 0, listed.stderr
    assert "shout-once" in listed.stdout and "software-change" in listed.stdout
    assert "half-done" not in listed.stdout
    refusals = [line for line in listed.stderr.splitlines() if "UserWarning: plugin" in line]
    assert [line.split("UserWarning: ")[1] for line in refusals] == [
        "plugin 'broken' (broken_feature_missing:FEATURE) cannot be loaded: "
        "ModuleNotFoundError: No module named 'broken_feature_missing'",
        "plugin 'clash' (clash_feature:FEATURE) is refused: its harnesses python already "
        "belong to the core feature",
        "plugin 'half' (half_feature:FEATURE) is refused: its template 'half-done' cannot be "
        "loaded: No module named 'acme_templates_gone'",
    ]
    assert "Traceback" not in listed.stderr

    # The built-in keeps its name: the python harness is still the core's.
    probe = (
        "from zeroshot_kernel.harness.registry import harness_for as h; print(type(h('python')))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    kept = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", probe], env=env, capture_output=True, text=True
    )
    assert kept.stdout.strip() == "<class 'zeroshot_kernel.harness.python_harness.PythonHarness'>"


def test_a_plan_naming_a_harness_nobody_installed_is_refused_at_admission(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    empty = tmp_path / "empty-site"
    empty.mkdir()
    (workspace / "graph.json").write_text(
        json.dumps(
            json.loads(
                zeroshot(workspace, empty, "template", "show", "single-worker", "--json").stdout
            )["graph"]
        )
    )
    checked = zeroshot(
        workspace,
        empty,
        "validate",
        "graph.json",
        "--runtime",
        '{"harness": "shout", "nodes": {"worker": {"kind": "agent"}}}',
    )
    assert checked.returncode == 1
    assert 'the harness "shout" is not installed here' in checked.stdout + checked.stderr
    assert "runtime › harness" in checked.stdout + checked.stderr
    assert "installed: claude, codex, local, openai, python" in checked.stdout + checked.stderr
    assert "Traceback" not in checked.stdout + checked.stderr
