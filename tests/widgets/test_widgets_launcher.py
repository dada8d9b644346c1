"""``Launcher``: diagnostics shown inline for what admission rejects; Launch shows a monitor."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench_support import TASK, research_workspace
from zeroshot_widgets import Launcher

from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.ledger.events import FailedResult
from zeroshot_kernel.sandbox.bwrap import BWRAP_ENV
from zeroshot_kernel.targets import Targets


@pytest.fixture
def client(tmp_path: Path) -> Client:
    return Client(workspace=str(research_workspace(tmp_path)))


def test_a_valid_form_is_admissible_and_creates_nothing(client: Client) -> None:
    launcher = Launcher(client, task=TASK, iterations=2)
    assert TASK in launcher.task.options
    assert launcher.validate()
    assert "admissible: every check passed" in launcher.diagnostics.value
    assert client.runs() == []


def test_a_broken_graph_shows_its_diagnostics_with_readable_paths(client: Client) -> None:
    launcher = Launcher(client, task=TASK, graph={"profile": "nope", "root": {"kind": "x"}})
    assert not launcher.validate()
    shown = launcher.diagnostics.value
    assert "invalid_graph_shape</b> at <code>profile</code>" in shown
    assert "problems found" in shown
    assert launcher.launch() is None and launcher.monitor is None
    assert "invalid_graph_shape</b> at <code>profile</code>" in launcher.diagnostics.value
    assert client.runs() == []


def test_option_and_task_problems_are_shown_too(client: Client) -> None:
    with pytest.raises(InvalidInput, match="--harness python: the python harness runs Python"):
        Launcher(client, task=TASK, harness="python")  # as the CLI refuses it
    launcher = Launcher(client, task=TASK)
    launcher.parallel.value = "many"
    assert not launcher.validate()
    assert "--parallel &#x27;many&#x27;: not a whole number" in launcher.diagnostics.value
    launcher.parallel.value = "40"
    assert not launcher.validate()
    assert "--parallel 40: not in the range 1 to 32" in launcher.diagnostics.value
    assert launcher.launch() is None and client.runs() == []
    launcher.parallel.value = ""
    launcher.task.value = "no-such-task"
    assert not launcher.validate()
    assert "task: research task" in launcher.diagnostics.value
    assert "not a directory" in launcher.diagnostics.value
    launcher.task.value = ""
    launcher.validate_button.click()
    assert "task: choose a research task folder" in launcher.diagnostics.value
    assert launcher.launch() is None


def test_launch_submits_and_shows_a_monitor(client: Client) -> None:
    launcher = Launcher(client, task=TASK, iterations=3)
    launcher.launch_button.click()
    monitor = launcher.monitor
    assert monitor is not None and launcher.monitor_box.children == (monitor,)
    (summary,) = client.runs()
    assert summary.run_id == monitor.run_id and summary.title == f"auto-research {TASK}"
    assert monitor.progress.max == 3
    monitor.stop_run()
    monitor.join(timeout=60)
    assert monitor.terminal == FailedResult(status="failed", reason="force_stopped")


def test_the_form_is_saved_as_a_profile_and_launched_from_it(client: Client) -> None:
    launcher = Launcher(client, task=TASK, iterations=2)
    assert launcher.profile.value == "" and launcher.target.value == "local"
    launcher.save_button.click()
    assert "save as: give the profile a name" in launcher.diagnostics.value
    launcher.profile_name.value = "rosen-2"
    launcher.save_button.click()
    assert "saved profile <code>rosen-2</code>" in launcher.diagnostics.value
    assert launcher.profile.value == "rosen-2"
    saved = client.profiles.get("rosen-2")
    assert saved.template is not None and saved.template.options["iterations"] == 2
    assert not launcher.save_profile("rosen-2")
    assert "already saved" in launcher.diagnostics.value

    launcher.iterations.value = 5  # the form changes; the chosen profile does not
    assert launcher.validate()
    monitor = launcher.launch()
    assert monitor is not None
    admitted = client.ledger.admitted(monitor.run_id)
    assert admitted["identity"] == saved.identity and admitted["title"] == saved.title
    assert monitor.progress.max == 2
    monitor.stop_run()
    monitor.join(timeout=60)


def test_picking_a_target_switches_the_ledger_and_its_profiles(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Targets(client.workspace).add("elsewhere", str(tmp_path / "elsewhere.db"))
    here = Launcher(client, task=TASK, iterations=2)
    here.save_profile("only-here")
    launcher = Launcher(client, task=TASK, iterations=2)
    assert [name for name, _ in launcher.target.options] == ["local", "elsewhere"]
    assert [value for _, value in launcher.profile.options] == ["", "only-here"]
    launcher.target.value = "elsewhere"
    assert launcher.client.url == f"sqlite:///{tmp_path}/elsewhere.db"
    assert [value for _, value in launcher.profile.options] == [""]
    assert launcher.save_profile("there")
    assert [
        p.name for p in Client(target="elsewhere", workspace=str(client.workspace)).profiles.list()
    ] == ["there"]
    assert [p.name for p in client.profiles.list()] == ["only-here"]
    monkeypatch.chdir(client.workspace)
    named = Launcher(target="elsewhere", profile="there", task=TASK)
    assert named.target.value == "elsewhere" and named.profile.value == "there"
    given = Launcher(Client(tmp_path / "adhoc.db", workspace=str(client.workspace)))
    assert given.target.value == "" and given.target.options[0][0].endswith("adhoc.db")


def test_a_target_switch_closes_only_the_clients_the_launcher_opened(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Targets(client.workspace).add("elsewhere", str(tmp_path / "elsewhere.db"))
    closed: list[str] = []
    monkeypatch.setattr(client, "close", lambda: closed.append("given"))
    launcher = Launcher(client, task=TASK)
    launcher.target.value = "elsewhere"
    assert closed == []  # the caller's client stays the caller's
    opened = launcher.client
    monkeypatch.setattr(opened, "close", lambda: closed.append("opened"))
    launcher.target.value = "local"
    assert closed == ["opened"] and launcher.client.url == client.url


def test_a_chosen_profile_fills_and_greys_out_the_fields_it_fixes(client: Client) -> None:
    launcher = Launcher(client, task=TASK, iterations=3, model="")
    assert launcher.save_profile("rosen-3")
    assert launcher.profile.value == "rosen-3"
    assert all(field.disabled for field in launcher.form_fields)
    assert "profile <code>rosen-3</code> fixes the fields" in launcher.profile_note.value

    launcher.profile.value = ""  # the form again, editable, as it was
    assert not any(field.disabled for field in launcher.form_fields)
    assert launcher.profile_note.value == ""
    launcher.iterations.value = 7
    launcher.study.value = "elsewhere"
    launcher.profile.value = "rosen-3"  # shows what will run: 3 iterations, not the 7 typed
    assert (launcher.iterations.value, launcher.study.value, launcher.task.value) == (3, "", TASK)
    assert launcher.iterations.disabled and launcher.task.disabled
    launcher.profile.value = ""
    assert (launcher.iterations.value, launcher.study.value) == (7, "elsewhere")
    assert not launcher.iterations.disabled

    reopened = Launcher(client, profile="rosen-3")  # preselected: greyed out from the start
    assert reopened.iterations.value == 3 and reopened.iterations.disabled
    assert reopened.task.value == TASK


def test_an_existing_profile_is_replaced_only_when_replace_is_ticked(client: Client) -> None:
    launcher = Launcher(client, task=TASK, iterations=2)
    assert launcher.save_profile("nightly")
    launcher.profile.value = ""
    launcher.iterations.value = 4
    launcher.profile_name.value = "nightly"
    launcher.save_button.click()
    assert "already saved" in launcher.diagnostics.value
    assert "tick &quot;replace&quot;" in launcher.diagnostics.value
    assert client.profiles.get("nightly").template.options["iterations"] == 2  # type: ignore[union-attr]

    launcher.replace.value = True
    launcher.save_button.click()
    assert "replaced profile <code>nightly</code>" in launcher.diagnostics.value
    saved = client.profiles.get("nightly")
    assert saved.template is not None and saved.template.options["iterations"] == 4
    assert [p.name for p in client.profiles.list()] == ["nightly"]
    assert launcher.replace.value is False  # one replacement per tick
    assert launcher.profile.value == "nightly" and launcher.iterations.value == 4


def test_the_sandbox_field_reaches_the_plan_and_a_missing_box_is_shown(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-bwrap"))
    launcher = Launcher(client, task=TASK, iterations=1, harness="claude", model="m")
    assert launcher.sandbox.value == "bwrap"
    assert launcher.launch() is None
    assert (
        "no sandbox" in launcher.diagnostics.value
        and "--sandbox none" in launcher.diagnostics.value
    )
    assert client.runs() == []
    launcher.harness.value = "local"
    launcher.sandbox.value = "none"
    monitor = launcher.launch()
    assert monitor is not None
    (summary,) = client.runs()
    assert client.run(summary.run_id).sandbox == "none"
    monitor.stop_run()
    monitor.join(timeout=60)
