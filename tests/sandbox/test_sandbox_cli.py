"""``--sandbox`` from the command line: a run whose agent CLIs would run model-written code
is refused in one line where no box can be made (nothing created), and ``--sandbox none``
runs it UNCONTAINED, said when it starts, when it ends and in ``status``. The agents are
the claude stand-in (``tests/agent_standins``), which records the environment it saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require
from engine_support import make_workspace
from harness_support import install_standin, one_step, script
from software_change_support import change_cli, repository, verdict
from support import zeroshot

from zeroshot_kernel.sandbox import problem
from zeroshot_kernel.sandbox.bwrap import BWRAP_ENV

# slow: real runs and a zeroshot process per call
pytestmark = pytest.mark.slow

TIMEOUT_S = 120


@pytest.fixture
def claude_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with a one-step claude graph and its plan, the stand-in scripted."""
    install_standin(tmp_path, "claude", monkeypatch)
    ws = make_workspace(tmp_path / "ws")
    script(ws, work=[{"increment": "value"}])
    graph, plan = one_step("claude")
    (ws.root / "graph.json").write_text(json.dumps(graph))
    (ws.root / "plan.json").write_text(json.dumps(plan))
    return ws.root


RUN = ("run", "graph.json", "--input", '{"value": 1}', "--runtime", "@plan.json")


def no_box(workspace: Path) -> dict[str, str]:
    """The environment of a machine without bubblewrap."""
    return {BWRAP_ENV: str(workspace / "no-bwrap")}


def test_no_box_refuses_a_claude_run_in_one_line_and_creates_nothing(claude_run: Path) -> None:
    ran = zeroshot(claude_run, *RUN, **no_box(claude_run))
    assert ran.returncode == 2, ran.stderr
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("error: no sandbox:") and "--sandbox none" in line
    assert "Traceback" not in ran.stderr
    listed = zeroshot(claude_run, "list", "--json")
    assert json.loads(listed.stdout) == []


def test_sandbox_none_runs_uncontained_and_says_so(claude_run: Path) -> None:
    ran = zeroshot(claude_run, *RUN, "--sandbox", "none", **no_box(claude_run))
    assert ran.returncode == 0, ran.stderr
    assert "UNCONTAINED" in ran.stderr  # when it starts
    assert ran.stdout.strip().splitlines()[-1].startswith("UNCONTAINED")  # and when it ends
    [run] = json.loads(zeroshot(claude_run, "list", "--json").stdout)
    status = zeroshot(claude_run, "status", run["runId"])
    assert "sandbox: none" in status.stdout and "UNCONTAINED" in status.stdout
    as_json = json.loads(zeroshot(claude_run, "status", run["runId"], "--json").stdout)
    assert as_json["sandbox"] == "none"


def test_a_boxed_run_says_nothing_of_containment_but_status_names_its_box(
    claude_run: Path,
) -> None:
    require(problem() is None, f"no box can be made here: {problem()} (make test installs it)")
    ran = zeroshot(claude_run, *RUN)
    assert ran.returncode == 0, ran.stderr
    assert "UNCONTAINED" not in ran.stdout + ran.stderr
    [run] = json.loads(zeroshot(claude_run, "list", "--json").stdout)
    assert "sandbox: bwrap" in zeroshot(claude_run, "status", run["runId"]).stdout


def test_a_profile_keeps_its_sandbox_and_a_run_may_override_it(claude_run: Path) -> None:
    missing = no_box(claude_run)
    saved = zeroshot(
        claude_run,
        "profile",
        "save",
        "loose",
        "--graph",
        "graph.json",
        "--runtime",
        "@plan.json",
        "--input",
        '{"value": 1}',
        "--sandbox",
        "none",
    )
    assert saved.returncode == 0, saved.stderr
    ran = zeroshot(claude_run, "run", "--profile", "loose", **missing)
    assert ran.returncode == 0, ran.stderr
    assert "UNCONTAINED" in ran.stderr
    boxed = zeroshot(claude_run, "run", "--profile", "loose", "--sandbox", "bwrap", **missing)
    assert boxed.returncode == 2 and "no sandbox" in boxed.stderr
    assert len(json.loads(zeroshot(claude_run, "list", "--json").stdout)) == 1


def test_a_change_with_checks_and_no_box_is_refused_before_anything_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    repo, _remote = repository(tmp_path)
    refused = change_cli(repo, tmp_path, "--check", "true", env=no_box(tmp_path))
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("error: no sandbox:") and "--sandbox none" in line
    assert not (repo / ".zeroshot" / "worktrees").exists()


def test_an_uncontained_change_says_so_when_it_starts_and_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, "claude", monkeypatch)
    repo, _remote = repository(tmp_path)
    script(
        worker=[{"write": {"change.txt": "changed\n"}, "json": None}],
        acceptance=[verdict("accepted")],
    )
    done = change_cli(
        repo,
        tmp_path,
        "--tier",
        "micro",
        "--delivery",
        "none",
        "--sandbox",
        "none",
        "--check",
        "true",
        env=no_box(tmp_path),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "UNCONTAINED" in done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-2].startswith("finished: succeeded") and lines[-1].startswith("UNCONTAINED")
