"""The IPython extension and its magics, in a real ``InteractiveShell`` and a real kernel."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output
from nbclient import NotebookClient
from support import wait_until
from typer.testing import CliRunner
from workbench_support import TASK, finished_run, research_workspace

import zeroshot_kernel
from zeroshot_kernel.admission.admit import verify_document
from zeroshot_kernel.cli import app
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import FailedResult
from zeroshot_kernel.magics import ZeroshotMagics
from zeroshot_kernel.sandbox.bwrap import BWRAP_ENV
from zeroshot_kernel.templates import expand_template

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    zeroshot_kernel.load_ipython_extension(ip)
    yield ip
    zeroshot_kernel.unload_ipython_extension(ip)


FAILED = r"failed \(exit status [12]\): the error is above"
"""What a command that failed raises (``UsageError``), after printing its own error."""


def line(ip: InteractiveShell, text: str, *, fails: bool = False) -> CapturedIO:
    """What ``%zeroshot TEXT`` printed; ``fails``: the command fails, and so its cell."""
    with capture_output() as captured:
        if fails:
            with pytest.raises(UsageError, match=FAILED):
                ip.run_line_magic("zeroshot", text)
        else:
            ip.run_line_magic("zeroshot", text)
    return captured


def cell(ip: InteractiveShell, args: str, body: str, *, fails: bool = False) -> CapturedIO:
    """What ``%%zeroshot_graph ARGS`` printed for ``body``; ``fails`` as for :func:`line`."""
    with capture_output() as captured:
        if fails:
            with pytest.raises(UsageError, match=FAILED):
                ip.run_cell_magic("zeroshot_graph", args, body)
        else:
            ip.run_cell_magic("zeroshot_graph", args, body)
    return captured


def cli(*args: str) -> str:
    """What ``zeroshot ARGS`` prints (stdout and stderr), run in this process."""
    return CliRunner().invoke(app, list(args)).output


def error_lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.lower().startswith("error")]


def widgets_shown(captured: CapturedIO) -> int:
    return sum(WIDGET in output.data for output in captured.outputs)


def ours(ip: InteractiveShell) -> Any:
    return ip.magics_manager.registry.get(ZeroshotMagics.__name__)


def test_importing_the_engine_keeps_the_hooks_lazy() -> None:
    code = textwrap.dedent("""
        import sys, zeroshot_kernel
        assert callable(zeroshot_kernel.load_ipython_extension)
        assert callable(zeroshot_kernel.unload_ipython_extension)
        print(sorted(m for m in sys.modules if m.split('.')[0] in
                     {'IPython', 'ipywidgets', 'matplotlib', 'zeroshot_widgets'}))
    """)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_load_is_idempotent_and_unload_removes_only_what_load_added() -> None:
    ip = InteractiveShell.instance()
    before = {kind: dict(table) for kind, table in ip.magics_manager.magics.items()}
    zeroshot_kernel.load_ipython_extension(ip)
    first = ours(ip)
    zeroshot_kernel.load_ipython_extension(ip)
    assert ours(ip) is first
    assert ip.magics_manager.magics["line"]["zeroshot"].__self__ is first
    assert ip.magics_manager.magics["cell"]["zeroshot_graph"].__self__ is first

    zeroshot_kernel.unload_ipython_extension(ip)
    assert ours(ip) is None
    assert ip.magics_manager.magics == before
    zeroshot_kernel.unload_ipython_extension(ip)  # unloading twice is harmless

    zeroshot_kernel.load_ipython_extension(ip)
    assert ours(ip) is not None and ours(ip) is not first
    assert "single-worker" in line(ip, "templates").stdout
    zeroshot_kernel.unload_ipython_extension(ip)
    assert ip.magics_manager.magics == before


@pytest.mark.slow  # a real kernel or real research runs
def test_listing_magics_print_what_the_cli_prints(shell: InteractiveShell) -> None:
    done = finished_run()
    ledger = done.client.url
    assert line(shell, "templates").stdout == cli("template", "list")
    assert line(shell, f"runs --ledger {ledger}").stdout == cli("list", "--ledger", ledger)
    assert done.run.id in line(shell, f"runs --ledger {ledger}").stdout
    status = line(shell, f"status {done.run.id} --ledger {ledger}").stdout
    assert status == cli("status", done.run.id, "--ledger", ledger)
    assert "phase:  finished" in status
    assert line(shell, f"stop {done.run.id} --ledger {ledger}").stdout == (
        f"{done.run.id} had already finished\n"
    )


def test_usage_errors_are_the_cli_errors(shell: InteractiveShell, tmp_path: Path) -> None:
    ledger = str(tmp_path / "empty.db")
    cases = [
        ("runs --bogus", ["list", "--bogus"]),
        ("stop", ["stop"]),
        (f"stop run-missing --ledger {ledger}", ["stop", "run-missing", "--ledger", ledger]),
        (f"monitor run-missing --ledger {ledger}", ["status", "run-missing", "--ledger", ledger]),
        ("research x --iterations 0", ["template", "show", "auto-research", "--iterations", "0"]),
    ]
    for magic, command in cases:
        printed = line(shell, magic, fails=True)
        assert printed.stdout == "" and printed.outputs == []
        assert error_lines(printed.stderr) == error_lines(cli(*command)) != [], magic
    assert "Usage: %zeroshot stop [OPTIONS]" in line(shell, "stop", fails=True).stderr
    assert "No such command 'nope'" in line(shell, "nope", fails=True).stderr
    assert "Commands:" in line(shell, "").stdout  # bare %zeroshot: its help, not a failure
    with pytest.raises(UsageError, match="No closing quotation"):
        shell.run_line_magic("zeroshot", "runs 'unbalanced")


@pytest.mark.slow  # a real kernel or real research runs
def test_research_launches_and_shows_a_monitor_that_stop_stops(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(research_workspace(tmp_path))
    missing = line(shell, "research no-such-task", fails=True)
    assert "error: research task" in missing.stderr and "not a directory" in missing.stderr
    unsuitable = line(shell, f"research {TASK} --harness python", fails=True)  # as the CLI
    assert unsuitable.stderr.startswith("error: --harness python: the python harness runs")
    assert unsuitable.stdout == "" and unsuitable.outputs == []
    rejected = line(shell, f"research {TASK} --harness bogus", fails=True)  # by admission
    assert "at runtime \u203a harness" in rejected.stdout
    assert rejected.stdout.rstrip().endswith("problem found.")

    launched = line(shell, f"research {TASK} --iterations 5")
    assert launched.stdout.startswith("started run-")
    assert widgets_shown(launched) == 1
    (monitor,) = ours(shell).shown
    assert monitor.progress.max == 5
    impatient = line(shell, "wait --timeout 0", fails=True)
    assert f"error: run {monitor.run_id} still running after 0.0 s" in impatient.stderr
    stopped = line(shell, f"stop {monitor.run_id}").stdout
    assert stopped.startswith(("stop requested", f"{monitor.run_id} closed"))
    monitor.join(timeout=60)
    assert monitor.terminal == FailedResult(status="failed", reason="force_stopped")
    assert "stop it with" not in launched.stdout  # the monitor's Stop, for this run or the next

    assert widgets_shown(line(shell, f"monitor {monitor.run_id}")) == 1
    assert widgets_shown(line(shell, "browse")) == 1
    assert len(ours(shell).shown) == 3
    reopened = ours(shell).shown[1]  # the monitor shown last: what wait defaults to
    continued = reopened.continue_run()  # Continue: the view follows a new run of the study
    assert continued is not None and reopened.run_id == continued != monitor.run_id
    waited = line(shell, "wait --timeout 300")  # the run that monitor follows now
    assert waited.stdout.startswith(f"{continued} succeeded"), waited.stdout + waited.stderr


def test_unloading_stops_the_pollers_of_the_monitors_shown(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(research_workspace(tmp_path))
    line(shell, f"research {TASK} --iterations 5")
    (monitor,) = ours(shell).shown
    wait_until(lambda: monitor.polling or monitor.terminal is not None, 60, "polling")
    zeroshot_kernel.unload_ipython_extension(shell)
    assert not monitor.polling
    monitor.stop_run()  # follows the run again: its end is published in this test, not a later one
    monitor.join(timeout=60)
    monitor.close()
    zeroshot_kernel.load_ipython_extension(shell)  # the fixture unloads it again


def test_graph_cell_shows_diagnostics_or_identity(shell: InteractiveShell) -> None:
    graph = expand_template("single-worker").graph
    verified = cell(shell, "", yaml.safe_dump(graph))
    identity = verify_document(graph).identity
    assert verified.stdout == f"graph: verified (identity {identity})\n"

    broken = dict(graph, policy={"unknown": 1})
    rejected = cell(shell, "", yaml.safe_dump(broken), fails=True)
    assert "at policy" in rejected.stdout and "found." in rejected.stdout
    as_json = cell(shell, "--json", '{"profile": "nope"}', fails=True)
    assert '"status": "rejected"' in as_json.stdout
    unreadable = cell(shell, "", "profile: [", fails=True)
    assert unreadable.stderr.startswith("error: neither JSON nor YAML")
    assert error_lines(cell(shell, "--bogus", "{}", fails=True).stderr) == error_lines(
        cli("validate", "x.json", "--bogus")
    )


@pytest.mark.slow  # a real kernel or real research runs
def test_the_magics_in_a_real_kernel(tmp_path: Path) -> None:
    done = finished_run()
    graph = yaml.safe_dump(expand_template("single-worker").graph)
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("%load_ext zeroshot_kernel"),
            nbformat.v4.new_code_cell("%load_ext zeroshot_kernel"),
            nbformat.v4.new_code_cell("%zeroshot templates"),
            nbformat.v4.new_code_cell(
                f"%zeroshot monitor {done.run.id} --ledger {done.client.url}"
            ),
            nbformat.v4.new_code_cell(f"%%zeroshot_graph\n{graph}"),
            nbformat.v4.new_code_cell("%zeroshot research no-such-task\nprint('went on')"),
            nbformat.v4.new_code_cell("%unload_ext zeroshot_kernel\n%zeroshot templates"),
        ]
    )
    NotebookClient(
        notebook,
        timeout=120,
        startup_timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    outputs = [c.outputs for c in notebook.cells]
    texts = ["".join(o.get("text", "") for o in cell_outputs) for cell_outputs in outputs]
    assert all(o.output_type != "error" for cell_outputs in outputs[:5] for o in cell_outputs)
    assert "already loaded" in texts[1]
    assert texts[2] == cli("template", "list")
    (shown,) = [o for o in outputs[3] if o.output_type == "display_data"]
    # a finished run's monitor is shown as its static snapshot (it outlives the kernel)
    assert WIDGET not in shown.data and "zeroshot-snapshot" in shown.data["text/html"]
    assert texts[4].startswith("graph: verified (identity ")
    # a failed command fails its cell: the rest of it does not run (and a notebook run
    # headless stops there: tests/batch/test_batch.py)
    assert "not a directory" in texts[5] and "went on" not in texts[5]
    assert "UsageError: %zeroshot research failed (exit status 2)" in texts[5]
    assert texts[6] == "UsageError: Line magic function `%zeroshot` not found.\n"


@pytest.mark.slow  # a real kernel or real research runs
def test_wait_and_report_mean_the_run_shown_last(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert "error: no run launched or shown yet" in line(shell, "wait", fails=True).stderr
    done = finished_run()
    ledger = done.client.url
    line(shell, f"monitor {done.run.id} --ledger {ledger}")
    waited = line(shell, "wait")  # in the ledger that run was shown from, not the default
    assert waited.stdout.startswith(f"{done.run.id} succeeded: ")
    (monitor,) = ours(shell).shown
    assert not monitor.polling and monitor.progress.value == 2
    report = line(shell, "report")
    assert [o for o in report.outputs if "image/png" in o.data]
    assert line(shell, f"report {done.run.id}").outputs
    assert line(shell, f"report {done.run.id} --ledger {ledger}").outputs
    elsewhere = str(tmp_path / "other.db")  # a ledger named is the one read
    assert "error: no run" in line(shell, f"wait --ledger {elsewhere}", fails=True).stderr


def test_graph_cell_keeps_the_parsed_graph_in_a_variable(shell: InteractiveShell) -> None:
    graph = expand_template("single-worker").graph
    shell.user_ns.pop("authored", None)
    assert cell(shell, "--as authored", yaml.safe_dump(graph)).stdout.startswith("graph: verified")
    assert shell.user_ns["authored"] == graph
    for name in ("1st", "class", "None"):
        refused = cell(shell, f"--as {name}", yaml.safe_dump(graph), fails=True)
        assert f"error: --as '{name}': not a Python variable name" in refused.stderr
        assert name not in shell.user_ns


@pytest.mark.slow  # a real kernel or real research runs
def test_research_takes_the_sandbox_option_as_the_cli_does(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(research_workspace(tmp_path))
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-bwrap"))
    refused = line(shell, f"research {TASK} --harness claude --model m", fails=True)
    assert error_lines(refused.stderr) and "no sandbox" in refused.stderr
    assert ours(shell).shown == []
    launched = line(shell, f"research {TASK} --iterations 1 --sandbox none")
    assert launched.stdout.startswith("started run-")
    (monitor,) = ours(shell).shown
    assert Client(workspace=str(Path.cwd())).run(monitor.run_id).sandbox == "none"
    monitor.stop_run()
    monitor.join(timeout=60)
