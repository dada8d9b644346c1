"""Trusted code never follows or runs what another hand left: a resumed controller that
finds a symbolic link where its log goes (into the user's ``~/.bashrc``) leaves the link's
target as it was and logs to a fresh file; modules planted in the workspace are imported by
no process of the engine."""

from __future__ import annotations

from pathlib import Path

import engine_graphs as g
import pytest
from engine_support import controller_pid, finish, kill, make_workspace, resume_when_free, wire
from support import wait_until
from workbench_support import research_workspace, start_research

from zeroshot_kernel.engine.launch import controller_log

# slow: detached controllers, resumed
pytestmark = pytest.mark.slow


def test_a_link_planted_at_the_controller_log_is_replaced_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROSHOT_LEASE_TTL_S", "1")  # the killed controller's lease ends soon
    ws = make_workspace(tmp_path / "ws")
    ws.behave(work={"wait_for_file": "go"})
    run = ws.submit(g.single_step_graph("talk"), {"value": 1})
    wait_until(lambda: (ws.root / "pids").is_dir() and any((ws.root / "pids").iterdir()), 30)
    kill(controller_pid(ws.client, run.id))

    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text("# the user's own\n")
    log = controller_log(ws.root, run.id)
    log.unlink()
    log.symlink_to(victim)

    resumed = resume_when_free(ws.client, run.id)
    (ws.root / "go").write_text("")
    assert wire(finish(resumed, timeout=60))["status"] == "succeeded"
    assert victim.read_text() == "# the user's own\n"
    assert not log.is_symlink() and log.is_file()


def test_the_engine_never_imports_what_lies_in_the_workspace(tmp_path: Path) -> None:
    """A ``sitecustomize.py``, a ``usercustomize.py`` and a package shadowing the engine's
    own, planted in the workspace (as a writer running uncontained could), are imported by
    no process of a research run: not the controller, not the engine's workers (embedded
    agents, trusted measure and adoption), not a resumed controller."""
    workspace = research_workspace(tmp_path / "ws")
    marker = tmp_path / "imported"
    plant = f"import pathlib\npathlib.Path({str(marker)!r}).write_text(__name__)\n"
    for name in ("sitecustomize.py", "usercustomize.py", "yaml.py", "numpy.py"):
        (workspace / name).write_text(plant)
    (workspace / "zeroshot_kernel").mkdir()
    (workspace / "zeroshot_kernel" / "__init__.py").write_text(plant)
    started = start_research(workspace, iterations=1)
    assert wire(finish(started.run, timeout=120))["status"] == "succeeded"
    assert not marker.exists(), marker.read_text()
