"""A real browser: JupyterLab and Notebook 7 on loopback in headless Debian chromium, driven
by playwright.

Each opens the quickstart, runs all cells from the Run menu, and watches the live monitor
appear and the run end (the monitor's output then holds its static snapshot: chart, rounds,
incumbent) and the report's chart appear, as a person would. The notebook is then saved, its
kernel shut down through the REST API and the page reloaded: the monitor's snapshot shows,
and no "Error displaying widget". Screenshots are saved under
``test-artifacts/browser/<lab|notebook>/``.

In both front ends a long run's monitor is saved mid-run, then stopped from its Stop button
(Continue keeps the widget in the output), saved again and its kernel restarted: the view
left behind greys out and says its live view ended; reopened without the kernel, both the
stopped and the mid-run notebook show their monitor's last state, restored from the widget
state the package's settings override makes Jupyter save (screenshots under
``test-artifacts/browser/reopen/``).

In JupyterLab the studies notebook runs two studies; its study browser lists both, ticking
them and pressing Compare shows the overlay image, and Export CSV writes one file of rounds
per study into the workspace, read back from disk (screenshots under
``test-artifacts/browser/studies/``). Needs ``/usr/bin/chromium`` (``make test`` installs
it); playwright never downloads a browser.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_ROOT, require
from support import wait_until

from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult

CHROMIUM = Path(os.environ.get("ZEROSHOT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "browser"
ROUNDS = 3  # the quickstart's default
STUDY_ROUNDS = 2  # the studies notebook's default, per study


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the jupyter server exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"the jupyter server did not answer {url} within 90 s:\n{log.read_text()}")


SERVERS = {"lab": "jupyterlab", "notebook": "notebook"}
"""The front ends tested, by the module that serves each."""


@dataclass(frozen=True)
class Server:
    kind: str
    """``lab`` (JupyterLab) or ``notebook`` (Notebook 7)."""
    base: str
    token: str
    root: Path

    def notebook_url(self, path: str) -> str:
        if self.kind == "lab":
            return f"{self.base}/lab/tree/{path}?reset&token={self.token}"
        return f"{self.base}/notebooks/{path}?token={self.token}"

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(
            f"{self.base}/api/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
        return json.loads(body) if body else None


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """JupyterLab or Notebook 7 serving a workspace laid out like the repository."""
    require(CHROMIUM.is_file(), f"no chromium at {CHROMIUM} (make test installs Debian's)")
    kind: str = request.param
    module = SERVERS[kind]
    require(
        importlib.util.find_spec(module) is not None,
        f"{module} is not installed (pip install -e '.[lab]')",
    )
    root = tmp_path / "workspace"
    (root / ".zeroshot").mkdir(parents=True)
    (root / "notebooks").mkdir()
    for notebook in ("quickstart.ipynb", "studies.ipynb"):
        shutil.copy(PROJECT_ROOT / "notebooks" / notebook, root / "notebooks")
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    token, port = secrets.token_hex(16), free_port()
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    log = tmp_path / f"{kind}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                "--no-browser",
                "--ip",
                "127.0.0.1",
                "--port",
                str(port),
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--allow-root",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/api/status?token={token}", process, log)
        yield Server(kind, base, token, root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def kernel_idle(server: Server) -> bool:
    """The notebook's kernel has started and is idle (read from the server)."""
    sessions = server.api("sessions")
    return bool(sessions) and all(s["kernel"]["execution_state"] == "idle" for s in sessions)


def run_all(page: Any, server: Server) -> None:
    """Run ▸ Run All Cells once the kernel is connected (before that, Run All only moves
    the selection: then ask again)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    wait_until(lambda: kernel_idle(server), 90, "the notebook's kernel to start")
    if server.kind == "lab":
        expect(
            page.locator(".jp-StatusBar-TextItem", has_text="Python 3 (ipykernel) | Idle")
        ).to_be_visible(timeout=90_000)
    first = page.locator(".jp-InputPrompt", has_text="[1]:")
    for _ in range(5):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        try:
            first.wait_for(timeout=15_000)
            return
        except PlaywrightTimeout:
            continue
    expect(first).to_be_visible()


@contextlib.contextmanager
def notebook_page(server: Server, notebook: str, artifacts: Path) -> Iterator[Any]:
    """Headless chromium on ``notebook`` after Run All; a failure leaves a screenshot."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server.notebook_url(notebook))
            run_all(page, server)
            try:
                yield page
            except Exception:
                page.screenshot(path=str(artifacts / "failure.png"), full_page=True)
                raise
        finally:
            browser.close()


def test_quickstart_runs_and_the_monitor_ends_and_survives_its_kernel(
    server: Server,
) -> None:
    from playwright.sync_api import expect

    artifacts = ARTIFACTS / server.kind
    artifacts.mkdir(parents=True, exist_ok=True)
    with notebook_page(server, "notebooks/quickstart.ipynb", artifacts) as page:
        # the live monitor, while the run goes on
        monitor = page.locator(".widget-vbox", has_text="auto-research rosenbrock").first
        monitor.wait_for(timeout=90_000)
        expect(monitor.locator(".widget-button", has_text="Stop")).to_be_visible()
        monitor.screenshot(path=str(artifacts / "monitor-live.png"))
        # at the run's end the output holds the monitor's static snapshot
        snapshot = page.locator(".zeroshot-snapshot").first
        expect(snapshot).to_contain_text("succeeded", timeout=180_000)
        expect(snapshot).to_contain_text(f"{ROUNDS} / {ROUNDS} rounds")
        expect(
            snapshot.locator(
                ".zeroshot-rounds-box tr.zeroshot-adopted, "
                ".zeroshot-rounds-box tr.zeroshot-rejected, "
                ".zeroshot-rounds-box tr.zeroshot-crashed"
            )
        ).to_have_count(ROUNDS)
        chart = snapshot.locator("img").first
        expect(chart).to_be_visible()
        assert chart.evaluate("img => img.naturalWidth") > 200  # a drawn PNG, not a stub
        snapshot.screenshot(path=str(artifacts / "monitor.png"))
        report = page.locator(".jp-RenderedImage img").last
        report.wait_for(timeout=120_000)
        wait_until(lambda: kernel_idle(server), 120, "the last cell to finish")
        report.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "quickstart.png"), full_page=True)

        reopen_without_the_kernel(page, server, artifacts)

    (run,) = Client(workspace=str(server.root)).runs()
    assert isinstance(run.terminal, SucceededResult)
    assert (artifacts / "quickstart.png").stat().st_size > 10_000


def save(page: Any, saved: Path) -> dict[str, Any]:
    """Ctrl+S, then the notebook as written to disk (the server writes it in place: read
    it once it parses)."""
    before = saved.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    written: list[dict[str, Any]] = []

    def read() -> bool:
        if saved.stat().st_mtime_ns == before:
            return False
        with contextlib.suppress(ValueError):
            written.append(json.loads(saved.read_text()))
        return bool(written)

    wait_until(read, 30, "the notebook to be saved")
    return written[-1]


def shut_down_kernels(server: Server) -> None:
    for session in server.api("sessions"):
        server.api(f"sessions/{session['id']}", method="DELETE")  # and its kernel
    wait_until(lambda: not server.api("kernels"), 30, "the kernel to shut down")


def no_widget_errors_once_idle(page: Any, server: Server) -> None:
    """Once the new kernel is idle the widget manager has restored what it could: nothing
    says "Error displaying widget" or is left "Loading widget"."""
    from playwright.sync_api import expect

    wait_until(lambda: kernel_idle(server), 90, "the new kernel to start")
    if server.kind == "lab":
        expect(
            page.locator(".jp-StatusBar-TextItem", has_text="Python 3 (ipykernel) | Idle")
        ).to_be_visible(timeout=90_000)
    else:
        expect(
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first
        ).to_be_attached(timeout=90_000)
    expect(page.get_by_text("Error displaying widget")).to_have_count(0)
    expect(page.get_by_text("Loading widget")).to_have_count(0)


def reopen_without_the_kernel(page: Any, server: Server, artifacts: Path) -> None:
    """Save, shut the kernel down through the REST API, reload: the monitor's output is
    its snapshot, and nothing says "Error displaying widget"."""
    from playwright.sync_api import expect

    save(page, server.root / "notebooks" / "quickstart.ipynb")
    shut_down_kernels(server)
    page.reload()
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    snapshot = page.locator(".zeroshot-snapshot").first
    expect(snapshot).to_contain_text("succeeded", timeout=60_000)
    expect(snapshot).to_contain_text("static snapshot")
    assert snapshot.locator("img").first.evaluate("img => img.naturalWidth") > 200
    no_widget_errors_once_idle(page, server)
    snapshot.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "reopened.png"), full_page=True)


LONG_ROUNDS = 50
"""Far more rounds than the test waits for: the run is stopped from its monitor."""


def widget_state(notebook: dict[str, Any]) -> dict[str, Any]:
    """The widget models JupyterLab saved in the notebook (the package's settings
    override turns saving on)."""
    saved = notebook["metadata"].get("widgets", {})
    state: dict[str, Any] = saved.get("application/vnd.jupyter.widget-state+json", {})
    return state.get("state", {})


def stale(locator: Any) -> None:
    """A live view whose kernel is gone: it says so and greys out its buttons."""
    from playwright.sync_api import expect

    expect(locator.locator(".zeroshot-stale-note")).to_be_visible(timeout=60_000)
    expect(locator.locator(".zeroshot-stale-note")).to_contain_text("live view ended")
    # each element's animation runs on its own clock: a button rendered after the note's
    # animation last restarted greys out up to one stale interval later
    for button in locator.locator(".zeroshot-live-only").all():
        if button.is_visible():
            expect(button).to_have_css("opacity", "0.3", timeout=30_000)


def test_a_monitor_saved_mid_run_or_stopped_reopens_without_its_kernel(
    server: Server,
) -> None:
    """A notebook saved while its run goes on, and again once Stop turned it into a
    "stopped" run with Continue on offer (the widget stays in the output for that): after
    a kernel restart the old view greys out and says its live view ended; reopened with
    the kernel shut down, each shows its monitor's last state and no "Error displaying
    widget"."""
    from playwright.sync_api import expect

    artifacts = ARTIFACTS / "reopen" / server.kind
    artifacts.mkdir(parents=True, exist_ok=True)
    notebook = server.root / "notebooks" / "long-run.ipynb"
    notebook.write_text(
        json.dumps(
            code_notebook(
                "%load_ext zeroshot_kernel",
                f"%zeroshot research rosenbrock --iterations {LONG_ROUNDS}",
            )
        )
    )
    mid_run = notebook.with_name("mid-run.ipynb")
    title = "auto-research rosenbrock"
    with notebook_page(server, "notebooks/long-run.ipynb", artifacts) as page:
        monitor = page.locator(".widget-vbox", has_text=title).first
        monitor.wait_for(timeout=90_000)
        expect(monitor).to_contain_text(
            re.compile(rf"[1-9]\d* / {LONG_ROUNDS} rounds"), timeout=120_000
        )
        assert widget_state(save(page, notebook)), "no widget state was saved"
        shutil.copy(notebook, mid_run)  # a notebook saved mid-run

        monitor.locator(".widget-button", has_text="Stop").click()
        expect(monitor.locator(".widget-html", has_text="stopped").first).to_be_visible(
            timeout=60_000
        )
        continue_button = monitor.locator(".widget-button", has_text="Continue")
        expect(continue_button).to_be_visible()
        # the run's end re-renders the output (its snapshot alternatives change): retry
        wait_until(lambda: settled_screenshot(monitor, artifacts / "stopped.png"), 60, "a shot")
        save(page, notebook)

        # a restarted kernel no longer drives the view it left behind
        (session,) = server.api("sessions")
        server.api(f"kernels/{session['kernel']['id']}/restart", method="POST")
        stale(monitor)
        monitor.screenshot(path=str(artifacts / "stopped-after-restart.png"))

        shut_down_kernels(server)
        page.reload()
        monitor = page.locator(".widget-vbox", has_text=title).first
        expect(monitor).to_contain_text("stopped", timeout=90_000)
        expect(monitor.locator(".widget-button", has_text="Continue")).to_be_visible()
        no_widget_errors_once_idle(page, server)
        stale(monitor)
        page.screenshot(path=str(artifacts / "stopped-reopened.png"), full_page=True)

        shut_down_kernels(server)
        page.goto(server.notebook_url("notebooks/mid-run.ipynb"))
        monitor = page.locator(".widget-vbox", has_text=title).first
        expect(monitor).to_contain_text(f"/ {LONG_ROUNDS} rounds", timeout=90_000)
        expect(monitor).to_contain_text("running")
        no_widget_errors_once_idle(page, server)
        stale(monitor)
        page.screenshot(path=str(artifacts / "mid-run-reopened.png"), full_page=True)

    (run,) = Client(workspace=str(server.root)).runs()
    assert run.terminal is not None and run.terminal.status == "failed"  # force_stopped


def settled_screenshot(locator: Any, path: Path) -> bool:
    """A screenshot, or False when the element was replaced while it was taken."""
    from playwright.sync_api import Error

    try:
        locator.screenshot(path=str(path), timeout=10_000)
    except Error as problem:
        if "not attached" not in str(problem):
            raise
        return False
    return True


def code_notebook(*cells: str) -> dict[str, Any]:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"cell-{n}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for n, source in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


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
