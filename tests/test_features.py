"""Features register with the core through entry points, as a third party's would.

A distribution installed beside zeroshot-kernel (here: a ``.dist-info`` folder and a module on
``PYTHONPATH``, exactly what pip leaves behind) adds a template, a harness and a CLI sub-app;
the real ``zeroshot`` command and the detached controller it starts find them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zeroshot_kernel.features import features

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


    FEATURE = Feature("acme", templates={"shout-once": "acme_feature:TEMPLATE"},
                      harnesses={"shout": "acme_feature:ShoutHarness"},
                      commands={"acme": "acme_feature:app"})
''')


def install(site: Path, name: str, entry: str, module: str | None = None) -> None:
    """What installing a distribution leaves on ``sys.path``: its metadata and its module."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[zeroshot_kernel.features]\n{entry}\n")
    if module is not None:
        (site / f"{name}.py").write_text(module)


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


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "acme_feature", "acme = acme_feature:FEATURE", PLUGIN)
    return site


def test_the_built_in_features_are_found_through_their_entry_points() -> None:
    names = [feature.name for feature in features()]
    assert names == ["auto_research", "software_change"]


def test_a_third_party_feature_adds_a_template_a_harness_and_a_command(
    tmp_path: Path, site: Path
) -> None:
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


def test_a_broken_feature_is_left_out_with_a_warning_and_the_rest_works(
    tmp_path: Path, site: Path
) -> None:
    install(site, "broken_feature", "broken = broken_feature_missing:FEATURE")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    listed = zeroshot(workspace, site, "template", "list")
    assert listed.returncode == 0, listed.stderr
    assert "shout-once" in listed.stdout and "software-change" in listed.stdout
    assert "feature 'broken'" in listed.stderr and "cannot be loaded" in listed.stderr
    assert "Traceback" not in listed.stderr
