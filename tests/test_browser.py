"""A real browser: JupyterLab on loopback in headless Debian chromium, driven by playwright.

It opens the quickstart, runs all cells from the Run menu, and watches the monitor advance
to the end of the run and the plateau chart appear, as a person would. Screenshots (the
notebook, and the monitor alone) are saved under ``test-artifacts/browser/``. Needs
``/usr/bin/chromium`` (``make test`` installs it); playwright never downloads a browser.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, require

from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult

CHROMIUM = Path(os.environ.get("ZEROSHOT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "browser"
ROUNDS = 3  # the quickstart's default


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"jupyter lab exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"jupyter lab did not answer {url} within 90 s:\n{log.read_text()}")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """JupyterLab serving a workspace laid out like the repository: (base URL, token, root)."""
    require(CHROMIUM.is_file(), f"no chromium at {CHROMIUM} (make test installs Debian's)")
    root = tmp_path / "workspace"
    (root / ".zeroshot").mkdir(parents=True)
    (root / "notebooks").mkdir()
    shutil.copy(PROJECT_ROOT / "notebooks" / "quickstart.ipynb", root / "notebooks")
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    token, port = secrets.token_hex(16), free_port()
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = tmp_path / "lab.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip", "127.0.0.1",
             "--port", str(port), f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", "--allow-root"],
            stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=root,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/api/status?token={token}", server, log)
        yield base, token, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_quickstart_runs_in_jupyterlab_and_the_monitor_reaches_the_end(
    lab: tuple[str, str, Path],
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, token, root = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/notebooks/quickstart.ipynb?reset&token={token}")
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(
                timeout=90_000)
            # The kernel's session must be connected, or Run All only moves the selection.
            expect(page.locator(".jp-StatusBar-TextItem", has_text="Python 3 (ipykernel) | Idle")
                   ).to_be_visible(timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            expect(page.locator(".jp-InputPrompt", has_text="[1]:")).to_be_visible(
                timeout=60_000)

            monitor = page.locator(".widget-vbox", has_text="auto-research rosenbrock").first
            monitor.wait_for(timeout=90_000)
            expect(monitor.locator(".widget-html", has_text="succeeded").first).to_be_visible(
                timeout=180_000)
            expect(monitor.locator(".widget-label", has_text=f"{ROUNDS} / {ROUNDS} rounds")
                   ).to_be_visible(timeout=30_000)
            chart = monitor.locator(".widget-image").first
            expect(chart).to_be_visible()
            assert chart.evaluate("img => img.naturalWidth") > 200  # a drawn PNG, not a stub
            monitor.screenshot(path=str(ARTIFACTS / "monitor.png"))
            report = page.locator(".jp-RenderedImage img").first
            report.wait_for(timeout=120_000)
            report.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "quickstart.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()

    (run,) = Client(workspace=str(root)).runs()
    assert isinstance(run.terminal, SucceededResult)
    assert (ARTIFACTS / "quickstart.png").stat().st_size > 10_000
