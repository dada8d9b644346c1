"""What the browser tests share: a JupyterLab or Notebook 7 server on loopback, headless
Debian chromium driven by playwright (never a downloaded browser), and the steps a person
takes in a notebook (Run All, save, the kernel shut down through the REST API).

Every page is 1,280 x 900 px, the width the screenshots under ``test-artifacts/browser/``
are checked at.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
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
VIEWPORT = {"width": 1280, "height": 900}
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "browser"
SERVERS = {"lab": "jupyterlab", "notebook": "notebook"}
"""The front ends tested, by the module that serves each."""
RUN_MIME = "application/vnd.zeroshot.run+json"
"""The output a monitor leaves in a notebook: ``{run_id, workspace}``, rendered live by the
front-end extension from the server extension's JSON (labextension/src/types.ts)."""
LAB_EXTENSION = "zeroshot-workbench"
SERVER_EXTENSION = "zeroshot_kernel.lab_server"


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


@dataclass(frozen=True)
class Server:
    kind: str
    """``lab`` (JupyterLab) or ``notebook`` (Notebook 7)."""
    base: str
    token: str
    root: Path
    log: Path

    def notebook_url(self, path: str) -> str:
        if self.kind == "lab":
            return f"{self.base}/lab/tree/{path}?reset&token={self.token}"
        return f"{self.base}/notebooks/{path}?token={self.token}"

    def home_url(self) -> str:
        """JupyterLab with no document open (a fresh layout), or Notebook 7's tree page."""
        if self.kind == "lab":
            return f"{self.base}/lab?reset&token={self.token}"
        return f"{self.base}/tree?token={self.token}"

    def _request(self, url: str, method: str) -> Any:
        request = urllib.request.Request(
            url, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def api(self, path: str, method: str = "GET") -> Any:
        """Jupyter's own REST API (``/api/...``)."""
        return self._request(f"{self.base}/api/{path}", method)

    def zeroshot(self, path: str, method: str = "GET") -> Any:
        """The server extension's JSON (``/zeroshot/api/...``, labextension/src/types.ts)."""
        return self._request(f"{self.base}/zeroshot/api/{path}", method)

    def extension_answers(self) -> bool:
        """Whether the server extension serves its studies endpoint."""
        try:
            self.zeroshot("studies")
        except OSError:
            return False
        return True


def require_the_lab_extension(server: Server | None = None) -> None:
    """Skip loudly (fail under ZEROSHOT_STRICT=1) unless chromium, the server extension
    and the front-end extension are all installed (``make .venv/.installed-test``), and
    ``server``, when given, serves the extension's JSON."""
    require(CHROMIUM.is_file(), f"no chromium at {CHROMIUM} (make test installs Debian's)")
    require(
        importlib.util.find_spec(SERVER_EXTENSION) is not None,
        f"the server extension {SERVER_EXTENSION} is not installed",
    )
    require(
        lab_extension_installed(),
        f"the front-end extension {LAB_EXTENSION} is not installed "
        "(make .venv/.installed-test builds labextension/ into zeroshot_kernel/labextension)",
    )
    if server is not None:
        require(
            server.extension_answers(),
            f"the jupyter server does not serve {server.base}/zeroshot/api/studies "
            f"(is {SERVER_EXTENSION} enabled? jupyter server extension list)",
        )


def lab_extension_installed() -> bool:
    """The built front-end extension is where JupyterLab looks for prebuilt extensions."""
    from jupyter_core.paths import jupyter_path

    return any((Path(d) / LAB_EXTENSION).is_dir() for d in jupyter_path("labextensions"))


@contextlib.contextmanager
def jupyter_server(kind: str, root: Path, scratch: Path, *options: str) -> Iterator[Server]:
    """``jupyter lab`` or ``jupyter notebook`` serving ``root``, its settings, workspaces
    and runtime files under ``scratch``, with more command-line ``options``; terminated on
    leaving."""
    require(CHROMIUM.is_file(), f"no chromium at {CHROMIUM} (make test installs Debian's)")
    module = SERVERS[kind]
    require(
        importlib.util.find_spec(module) is not None,
        f"{module} is not installed (pip install -e '.[lab]')",
    )
    settings = scratch / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    token, port = secrets.token_hex(16), free_port()
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(scratch / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "lab-workspaces"),
        "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
    }
    log = scratch / f"{kind}.log"
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
                *options,
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/api/status?token={token}", process, log)
        yield Server(kind, base, token, root, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def browser_page(artifacts: Path) -> Iterator[Any]:
    """A 1,280 x 900 page in headless chromium; a failure leaves ``failure.png`` and the
    browser console's messages (``console.log``) in ``artifacts``."""
    from playwright.sync_api import sync_playwright

    artifacts.mkdir(parents=True, exist_ok=True)
    console: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
            try:
                yield page
            except BaseException:
                with contextlib.suppress(Exception):
                    page.screenshot(path=str(artifacts / "failure.png"), full_page=True)
                (artifacts / "console.log").write_text("\n".join(console))
                raise
        finally:
            browser.close()


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
    with browser_page(artifacts) as page:
        page.goto(server.notebook_url(notebook))
        run_all(page, server)
        yield page


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


def no_widget_errors(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("Error displaying widget")).to_have_count(0)
    expect(page.get_by_text("Loading widget")).to_have_count(0)


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
    no_widget_errors(page)


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
