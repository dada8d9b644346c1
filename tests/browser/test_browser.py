"""A real browser: JupyterLab and Notebook 7 on loopback in headless Debian chromium, driven
by playwright (helpers in ``browser_support.py``).

Each opens the quickstart, runs all cells from the Run menu, and watches the monitor in the
launch cell's output, rendered live by the front-end extension from the server extension's
JSON (``application/vnd.zeroshot.run+json``, not a widget), follow the run to its end, and
the report's chart appear. Saved, its kernel shut down through the REST API and the page
reloaded, the monitor shows the finished run and nothing says "Error displaying widget";
the notebook on disk holds no widget state (screenshots under
``test-artifacts/browser/<lab|notebook>/``).

A notebook saved mid-run and reopened with its kernel shut down shows a monitor that is
still live: its progress grows and it reaches "succeeded". Another, reopened the same way
in JupyterLab, is stopped from the monitor's Stop button and continued from its Continue
button: the view follows the new run, which counts the study's earlier rounds (screenshots
under ``test-artifacts/browser/reopen/<lab|notebook>/``).

In JupyterLab the studies notebook runs two studies; its study browser (ipywidgets) lists
both, ticking them and pressing Compare shows the overlay image, and Export CSV writes one
file of rounds per study into the workspace, read back from disk (screenshots under
``test-artifacts/browser/studies/``). Needs ``/usr/bin/chromium`` (``make test`` installs
it); playwright never downloads a browser.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    ARTIFACTS,
    RUN_MIME,
    SERVERS,
    Server,
    code_notebook,
    jupyter_server,
    kernel_idle,
    no_widget_errors,
    notebook_page,
    require_the_lab_extension,
    save,
    shut_down_kernels,
)
from conftest import PROJECT_ROOT
from support import wait_until

from zeroshot_kernel.auto_research.studies.catalog import study_of_run
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult

# slow: a real browser (chromium) on JupyterLab and Notebook 7 servers
pytestmark = pytest.mark.slow

ROUNDS = 3  # the quickstart's default
STUDY_ROUNDS = 2  # the studies notebook's default, per study
MID_RUN_ROUNDS = 40
"""Enough rounds (about 0.5 to 1 s each) that a notebook saved as its run starts is
reopened well before the last."""
STOPPED_ROUNDS = 100  # the most `--iterations` takes
"""More rounds than the test waits for: the run is stopped from its monitor."""
MAX_NOTEBOOK_BYTES = 100_000


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """JupyterLab or Notebook 7 serving a workspace laid out like the repository."""
    root = tmp_path / "workspace"
    (root / ".zeroshot").mkdir(parents=True)
    (root / "notebooks").mkdir()
    for notebook in ("quickstart.ipynb", "studies.ipynb"):
        shutil.copy(PROJECT_ROOT / "notebooks" / notebook, root / "notebooks")
    try:
        with jupyter_server(request.param, root, tmp_path) as started:
            yield started
    finally:
        stop_unfinished_runs(root)


def stop_unfinished_runs(workspace: Path) -> None:
    """No detached controller outlives its test."""
    if not (workspace / ".zeroshot").is_dir():
        return
    client = Client(workspace=str(workspace))
    for summary in client.runs():
        run = client.run(summary.run_id)
        if run.terminal is None:
            run.stop()


MONITOR_STATE_JS = """
() => {
  const monitor = document.querySelector('.zs-monitor');
  if (!monitor) return null;
  const text = selector => {
    const element = monitor.querySelector(selector);
    return element ? element.textContent.trim() : null;
  };
  const progress = text('.zs-monitor-progress');
  const words = /(\\d+)\\s*\\/\\s*(\\d+)/.exec(progress || '');
  const stop = monitor.querySelector('button.zs-stop');
  const more = monitor.querySelector('button.zs-continue');
  const shown = element => !!element && element.getClientRects().length > 0;
  return {
    run: monitor.getAttribute('data-run'),
    phase: monitor.getAttribute('data-phase') || text('.zs-monitor-phase'),
    phase_text: text('.zs-monitor-phase'),
    progress,
    done: words ? Number(words[1]) : null,
    total: words ? Number(words[2]) : null,
    message: text('.zs-monitor-message'),
    error: text('.zs-monitor-error'),
    stop_shown: shown(stop),
    stop_disabled: !!stop && stop.disabled,
    continue_shown: shown(more),
    points: monitor.querySelectorAll('.zs-monitor-chart .scatterlayer path.point').length,
  };
}
"""
"""Read in the page: the monitor's ``data-run`` and ``data-phase``, its progress words
("12 / 50 rounds · round 13 in progress"), buttons and chart points."""


def monitor_state(page: Any) -> dict[str, Any] | None:
    """What the notebook's monitor (the front-end extension's renderer) shows: run id,
    phase, progress (done, total), message, buttons, chart points; None before it shows."""
    state: dict[str, Any] | None = page.evaluate(MONITOR_STATE_JS)
    return state


def await_monitor(page: Any, predicate: Any, timeout: float, message: str) -> dict[str, Any]:
    """The monitor's state once ``predicate(state)`` holds (looked at every 250 ms)."""
    deadline = time.monotonic() + timeout
    state = monitor_state(page)
    while state is None or not predicate(state):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {message}; "
                f"the monitor showed {state or 'nothing'}"
            )
        page.wait_for_timeout(250)  # the page goes on meanwhile: a poll, not a pause
        state = monitor_state(page)
    return state


def phase_is(phase: str, points: int = 0) -> Any:
    """The monitor says ``phase``, its chart drawn with ``points`` points at least (Plotly
    is loaded and draws after the words)."""
    return lambda state: (
        state["phase"] is not None and phase in state["phase"].lower() and state["points"] >= points
    )


def saved_monitor_output(
    notebook: dict[str, Any], server: Server, *, small: bool = True
) -> dict[str, Any]:
    """The saved notebook holds the monitor as a run reference, no widget state, and
    (``small``: nothing but the monitor in it) stays small; returns the reference."""
    assert "widgets" not in notebook["metadata"], "the notebook saved widget state"
    references = [
        output["data"][RUN_MIME]
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if RUN_MIME in output.get("data", {})
    ]
    assert len(references) == 1, f"expected one {RUN_MIME} output, found {references}"
    (reference,) = references
    assert Path(reference["workspace"]).resolve() == server.root.resolve()
    size = len(json.dumps(notebook, indent=1))
    assert not small or size < MAX_NOTEBOOK_BYTES, f"the saved notebook is {size} bytes"
    return dict(reference)


def test_quickstart_runs_and_the_monitor_ends_and_survives_its_kernel(
    server: Server,
) -> None:
    from playwright.sync_api import expect

    require_the_lab_extension(server)
    artifacts = ARTIFACTS / server.kind
    path = server.root / "notebooks" / "quickstart.ipynb"
    with notebook_page(server, "notebooks/quickstart.ipynb", artifacts) as page:
        # the live monitor, while the run goes on
        monitor = page.locator(".zs-monitor").first
        monitor.wait_for(timeout=90_000)
        live = await_monitor(page, lambda s: s["run"] and s["phase"], 60, "the live monitor")
        monitor.screenshot(path=str(artifacts / "monitor-live.png"))
        # it follows the run to its end
        ended = await_monitor(page, phase_is("succeeded", ROUNDS), 240, "the run to succeed")
        assert (ended["done"], ended["total"]) == (ROUNDS, ROUNDS), ended
        assert ended["run"] == live["run"]
        expect(monitor.locator("button.zs-stop")).to_be_disabled()
        expect(monitor.locator("button.zs-continue")).to_be_hidden()
        assert ended["points"] >= ROUNDS, "the monitor's chart has no points"
        monitor.screenshot(path=str(artifacts / "monitor.png"))
        report = page.locator(".jp-RenderedImage img").last
        report.wait_for(timeout=120_000)
        wait_until(lambda: kernel_idle(server), 120, "the last cell to finish")
        report.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "quickstart.png"), full_page=True)

        # saved, kernel shut down, reloaded: the monitor shows the finished run
        # (the report's chart and tables make this one large: no size bound)
        reference = saved_monitor_output(save(page, path), server, small=False)
        assert reference["run_id"] == live["run"]
        shut_down_kernels(server)
        page.reload()
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        reopened = await_monitor(page, phase_is("succeeded", ROUNDS), 60, "the reopened monitor")
        assert reopened["run"] == live["run"]
        assert (reopened["done"], reopened["total"]) == (ROUNDS, ROUNDS), reopened
        assert reopened["points"] >= ROUNDS
        no_widget_errors(page)
        monitor.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "reopened.png"), full_page=True)

    (run,) = Client(workspace=str(server.root)).runs()
    assert run.run_id == live["run"]
    assert isinstance(run.terminal, SucceededResult)
    assert (artifacts / "quickstart.png").stat().st_size > 10_000


def launch_notebook(server: Server, name: str, iterations: int) -> Path:
    notebook = server.root / "notebooks" / name
    notebook.write_text(
        json.dumps(
            code_notebook(
                "%load_ext zeroshot_kernel",
                f"%zeroshot research rosenbrock --iterations {iterations}",
            )
        )
    )
    return notebook


def reopen_without_the_kernel(page: Any, server: Server) -> dict[str, Any]:
    """Shut the kernel down through the REST API and reload: the monitor's first state
    after the reload."""
    shut_down_kernels(server)
    page.reload()
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    return await_monitor(
        page, lambda s: s["run"] and s["phase"], 60, "the reopened monitor's first state"
    )


def kernel_gone_again(page: Any, server: Server) -> None:
    """The reloaded page starts a new kernel: once it is idle, nothing says "Error
    displaying widget"; then it is shut down too, and the monitor goes on without one."""
    wait_until(lambda: kernel_idle(server), 90, "the new kernel to start")
    no_widget_errors(page)
    shut_down_kernels(server)


def test_a_notebook_saved_mid_run_reopens_without_its_kernel_to_a_live_monitor(
    server: Server,
) -> None:
    """Saved while its run goes on, the kernel shut down, the page reloaded: the monitor
    is live (its progress grows) and reaches "succeeded" with no kernel running."""
    require_the_lab_extension(server)
    artifacts = ARTIFACTS / "reopen" / server.kind
    notebook = launch_notebook(server, "mid-run.ipynb", MID_RUN_ROUNDS)
    with notebook_page(server, "notebooks/mid-run.ipynb", artifacts) as page:
        started = await_monitor(page, phase_is("running"), 120, "the run to start")
        assert started["total"] == MID_RUN_ROUNDS, started
        page.locator(".zs-monitor").first.screenshot(path=str(artifacts / "mid-run-live.png"))
        reference = saved_monitor_output(save(page, notebook), server)
        assert reference["run_id"] == started["run"]

        reopened = reopen_without_the_kernel(page, server)
        assert reopened["run"] == started["run"]
        assert reopened["phase"] and "succeeded" not in reopened["phase"].lower(), (
            f"the run ended before the notebook was reopened ({reopened}): "
            "give it more rounds (MID_RUN_ROUNDS)"
        )
        page.screenshot(path=str(artifacts / "mid-run-reopened.png"), full_page=True)
        kernel_gone_again(page, server)
        grown = await_monitor(
            page,
            lambda s: s["done"] is not None and s["done"] > (reopened["done"] or 0),
            180,
            "the reopened monitor's progress to grow",
        )
        assert server.api("kernels") == []
        ended = await_monitor(
            page, phase_is("succeeded", MID_RUN_ROUNDS), 240, "the run to succeed"
        )
        assert (ended["done"], ended["total"]) == (MID_RUN_ROUNDS, MID_RUN_ROUNDS), ended
        assert ended["run"] == started["run"] and grown["run"] == started["run"]
        assert ended["points"] >= MID_RUN_ROUNDS
        assert not ended["stop_shown"] or ended["stop_disabled"]
        assert server.api("kernels") == []  # all along: no kernel drove the view
        no_widget_errors(page)
        page.screenshot(path=str(artifacts / "mid-run-ended.png"), full_page=True)

    (run,) = Client(workspace=str(server.root)).runs()
    assert isinstance(run.terminal, SucceededResult)


# JupyterLab only: Notebook 7 renders the same extension's monitor, which the two tests
# above reopen in both front ends.
@pytest.mark.parametrize("server", ["lab"], indirect=True)
def test_a_reopened_monitor_stops_its_run_and_continues_the_study(server: Server) -> None:
    """Reopened with no kernel: Stop makes the run "stopped" (Stop greys out, Continue
    shows); Continue starts a new run on the same study, which the view follows, counting
    the study's earlier rounds, its chart not empty."""
    from playwright.sync_api import expect

    require_the_lab_extension(server)
    artifacts = ARTIFACTS / "reopen" / server.kind
    notebook = launch_notebook(server, "stop-continue.ipynb", STOPPED_ROUNDS)
    with notebook_page(server, "notebooks/stop-continue.ipynb", artifacts) as page:
        # a reviewed round, so the study has history to continue
        first = await_monitor(
            page, lambda s: (s["done"] or 0) >= 1, 180, "the first reviewed round"
        )
        save(page, notebook)
        reopened = reopen_without_the_kernel(page, server)
        assert reopened["run"] == first["run"]
        kernel_gone_again(page, server)
        monitor = page.locator(".zs-monitor").first
        await_monitor(page, phase_is("running"), 60, "the reopened monitor to say running")

        monitor.locator("button.zs-stop").click()
        stopped = await_monitor(page, phase_is("stopped"), 120, "the run to stop")
        # once stopped, the message says so, not "stop requested" any more
        said = await_monitor(
            page,
            lambda s: s["phase"] == "stopped" and bool(s["message"]),
            30,
            "the monitor to say how the stop ended",
        )
        assert "requested" not in said["message"], said
        assert said["message"].startswith("the run has stopped"), said
        expect(monitor.locator("button.zs-stop")).to_be_disabled()
        expect(monitor.locator("button.zs-continue")).to_be_visible()
        assert stopped["run"] == first["run"]
        earlier = stopped["done"]
        assert earlier is not None and earlier >= 1, stopped
        assert server.api("kernels") == []
        monitor.screenshot(path=str(artifacts / "stopped.png"))

        monitor.locator("button.zs-continue").click()
        continued = await_monitor(
            page,
            lambda s: s["run"] not in (None, first["run"]) and s["done"] is not None,
            60,
            "the view to follow the new run",
        )
        assert continued["done"] >= earlier, f"the new run forgot earlier rounds: {continued}"
        assert continued["total"] == STOPPED_ROUNDS, continued
        charted = await_monitor(
            page, lambda s: s["points"] >= earlier, 30, "the chart to show the earlier rounds"
        )
        assert charted["run"] == continued["run"]
        assert server.api("kernels") == []
        page.screenshot(path=str(artifacts / "continued.png"), full_page=True)
        monitor.screenshot(path=str(artifacts / "continued-monitor.png"))

        client = Client(workspace=str(server.root))
        runs = {summary.run_id for summary in client.runs()}
        assert runs == {first["run"], continued["run"]}
        assert study_of_run(client, continued["run"]) == study_of_run(client, first["run"])
        stopped_run = client.run(first["run"]).terminal
        assert stopped_run is not None and stopped_run.status == "failed"  # force_stopped

        # the new run stops from the same view
        monitor.locator("button.zs-stop").click()
        again = await_monitor(page, phase_is("stopped"), 120, "the new run to stop")
        assert again["run"] == continued["run"]


@pytest.mark.parametrize("server", ["lab"], indirect=True)
def test_the_study_browser_lists_compares_and_exports_two_studies(server: Server) -> None:
    """Run All on the studies notebook; tick both studies, Compare (the overlay image),
    Export CSV (the written paths, then the files on disk)."""
    from playwright.sync_api import expect

    studies = ("alpha", "beta")
    artifacts = ARTIFACTS / "studies"
    artifacts.mkdir(parents=True, exist_ok=True)
    with notebook_page(server, "notebooks/studies.ipynb", artifacts) as page:
        # the table, once both runs have ended: one row (and checkbox) per study
        table = page.locator(".widget-vbox", has_text="studies and runs in").first
        table.wait_for(timeout=300_000)
        grid = table.locator(".widget-gridbox").first
        for name in studies:
            expect(grid.locator("b", has_text=name)).to_have_count(1)
        # each study's row and its run's row say how the run ended
        expect(grid.locator("span[title='succeeded']")).to_have_count(2 * len(studies))
        checkboxes = grid.locator("input[type='checkbox']")
        expect(checkboxes).to_have_count(len(studies))
        for index in range(len(studies)):
            checkboxes.nth(index).check()
        expect(table).to_contain_text(f"{len(studies)} of {len(studies)} studies; 2 selected")
        table.screenshot(path=str(artifacts / "table.png"))

        compare = table.locator(".widget-button", has_text="Compare")
        expect(compare).to_be_enabled()
        compare.click()
        overlay = table.locator("img.widget-image").first
        expect(overlay).to_be_visible(timeout=60_000)
        assert overlay.get_attribute("src")  # an image was sent, not an empty widget
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 200",
            arg=overlay.element_handle(),
            timeout=60_000,
        )
        for name in studies:  # the incumbents side by side, one column per study
            expect(table.locator(".zeroshot-incumbents thead th", has_text=name)).to_have_count(1)

        export = table.locator(".widget-button", has_text="Export CSV")
        expect(export).to_be_enabled()
        export.click()
        written = table.locator(".zeroshot-exported")
        for name in studies:
            expect(written).to_contain_text(f"{name}-rounds.csv", timeout=60_000)
        shown = written.inner_text()
        expect(page.get_by_text("Error displaying widget")).to_have_count(0)
        overlay.scroll_into_view_if_needed()
        table.screenshot(path=str(artifacts / "study-browser.png"))
        page.screenshot(path=str(artifacts / "studies.png"), full_page=True)

    exports = (server.root / "exports").resolve()
    assert sorted(p.name for p in exports.iterdir()) == [f"{n}-rounds.csv" for n in studies]
    client = Client(workspace=str(server.root))
    runs = {run.title: run.run_id for run in client.runs()}
    for name in studies:
        path = exports / f"{name}-rounds.csv"
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert [row["round"] for row in rows] == [str(n) for n in range(1, STUDY_ROUNDS + 1)]
        assert {row["run_id"] for row in rows} == {runs[f"auto-research rosenbrock ({name})"]}
        assert all(row["candidate_id"] and row["metric"] for row in rows)
        assert f"wrote {path} ({STUDY_ROUNDS} rounds)" in shown  # the path the widget showed
    assert (artifacts / "study-browser.png").stat().st_size > 10_000
