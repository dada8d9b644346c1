"""The JupyterLab extension in a real browser: JupyterLab on loopback in headless Debian
chromium, driven by playwright (helpers in ``browser_support.py``), over a workspace where
a real auto-research run is started from the public API, as the CLI would.

- The Studies side panel, opened from its tab with no notebook and no kernel, lists the
  study as its run starts and counts its rounds as they are reviewed (screenshots under
  ``test-artifacts/browser/panel/``).
- The study's dashboard (the ``zeroshot:open-study`` command): hovering a point of the
  best-so-far chart shows Plotly's hover label, clicking it opens that candidate; the runs
  table hides its empty columns (cost and tokens, which no harness here reports) until
  chosen, filters by an expression (``metric < X``), and a malformed one says so and keeps
  the rows (screenshots under ``test-artifacts/browser/dashboard/``).
- Notebook 7's tree page offers ``zeroshot: Show Studies`` in its command palette, which
  shows the Studies panel listing the study (screenshots under
  ``test-artifacts/browser/notebook-tree/``).

One server and one run serve the module: the panel test watches the run go on, the
dashboard tests read it once it has ended. Needs ``/usr/bin/chromium`` and the server and
front-end extensions (``make .venv/.installed-test``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    ARTIFACTS,
    Server,
    browser_page,
    jupyter_server,
    require_the_lab_extension,
)
from support import wait_until
from workbench_support import TASK, ResearchRun, research_workspace, start_research

from zeroshot_kernel.ledger.events import SucceededResult

# slow: a real browser on a JupyterLab server, over a real research run
pytestmark = pytest.mark.slow

ITERATIONS = 20
"""Reviewed rounds of the module's run (about 0.5 to 1 s each): enough for the panel, which
polls every 2 s, to see the count grow, and rows on both sides of a filter."""
STUDY = TASK  # a run that names no study records into the task's
PANEL = "zeroshot-studies-panel"


@dataclass
class Lab:
    """JupyterLab over a research workspace, and the module's run (started on demand)."""

    server: Server
    workspace: Path
    runs: list[ResearchRun] = field(default_factory=list)

    def study_run(self) -> ResearchRun:
        """The module's run, started by the first test that asks."""
        if not self.runs:
            self.runs.append(start_research(self.workspace, iterations=ITERATIONS))
        return self.runs[0]

    def finished_run(self) -> ResearchRun:
        started = self.study_run()
        result = started.run.result(timeout=300)
        assert isinstance(result, SucceededResult), result
        return started


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    require_the_lab_extension()
    scratch = tmp_path_factory.mktemp("lab-extension")
    workspace = research_workspace(scratch / "workspace")
    # the app on window.jupyterapp: the tests run its commands, as the palette would
    with jupyter_server("lab", workspace, scratch, "--LabApp.expose_app_in_browser=True") as up:
        require_the_lab_extension(up)
        shared = Lab(up, workspace)
        try:
            yield shared
        finally:
            for started in shared.runs:
                if started.run.terminal is None:
                    started.run.stop()


def open_lab(page: Any, server: Server) -> None:
    """JupyterLab with nothing open (a fresh layout), once its app has started."""
    page.goto(server.home_url())
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('zeroshot:open-study')",
        timeout=90_000,
    )


def execute(page: Any, command: str, args: dict[str, Any] | None = None) -> None:
    page.evaluate(
        "([command, args]) => window.jupyterapp.commands.execute(command, args)",
        [command, args or {}],
    )


def no_kernels(server: Server) -> None:
    assert server.api("kernels") == [], "a kernel is running"


def rounds_in(row: Any) -> int | None:
    """The rounds a study row counts: its ``data-rounds``, else "N rounds" in its text."""
    counted = row.get_attribute("data-rounds")
    if counted is not None and counted.isdigit():
        return int(counted)
    found = re.search(r"(\d+)\s*rounds?\b", row.inner_text())
    return int(found[1]) if found else None


def test_the_side_panel_lists_a_study_while_its_run_goes_on_with_no_kernel(lab: Lab) -> None:
    from playwright.sync_api import expect

    server = lab.server
    artifacts = ARTIFACTS / "panel"
    with browser_page(artifacts) as page:
        open_lab(page, server)
        page.locator(f".jp-SideBar .lm-TabBar-tab[data-id='{PANEL}']").click()
        panel = page.locator(f"#{PANEL}")
        expect(panel).to_be_visible(timeout=30_000)
        page.screenshot(path=str(artifacts / "before-the-run.png"))
        no_kernels(server)

        started = lab.study_run()  # from the public API, as `zeroshot research run` does
        row = panel.locator(f".zs-study-row[data-study='{STUDY}']")
        expect(row).to_be_visible(timeout=120_000)
        page.screenshot(path=str(artifacts / "run-started.png"))
        counted: list[int] = []

        def counts_a_round() -> bool:
            rounds = rounds_in(row)
            if rounds is None or rounds < 1:
                return False
            counted.append(rounds)
            return True

        wait_until(counts_a_round, 180, "the study row to count a reviewed round")
        first = counted[-1]
        assert started.run.terminal is None, "the run ended before the panel counted a round"
        assert first < ITERATIONS
        page.screenshot(path=str(artifacts / "first-round.png"))
        wait_until(lambda: (rounds_in(row) or 0) > first, 180, "the round count to grow")
        page.screenshot(path=str(artifacts / "rounds-growing.png"))
        no_kernels(server)

        result = started.run.result(timeout=300)
        assert isinstance(result, SucceededResult), result
        wait_until(lambda: rounds_in(row) == ITERATIONS, 60, f"{ITERATIONS} rounds in the row")
        page.screenshot(path=str(artifacts / "run-ended.png"))
        # the study's run is listed under it, by id
        run_row = panel.locator(f".zs-run-row[data-run='{started.run.id}']")
        if run_row.count() == 0:
            row.click()  # a study row may fold its runs away
        expect(run_row).to_be_attached(timeout=30_000)
        # the CLI's words for how it ended; the row's value is the incumbent's metric
        expect(run_row.locator(".zs-run-phase")).to_have_text("succeeded", timeout=30_000)
        expect(row.locator(".zs-study-incumbent")).to_contain_text(f"incumbent {STUDY} = ")
        no_kernels(server)


def open_dashboard(page: Any, server: Server, study: str) -> Any:
    open_lab(page, server)
    execute(page, "zeroshot:open-study", {"study": study})
    dashboard = page.locator(f".zs-dashboard[data-study='{study}']")
    dashboard.wait_for(timeout=60_000)
    return dashboard


POINT_CENTRES_JS = """
chart => Array.from(chart.querySelectorAll('.scatterlayer .trace')).map(trace =>
  Array.from(trace.querySelectorAll('path.point')).map(point => {
    const box = point.getBoundingClientRect();
    return box.width > 0 ? [box.x + box.width / 2, box.y + box.height / 2] : null;
  }))
"""


def test_hovering_and_clicking_a_chart_point_opens_its_candidate(lab: Lab) -> None:
    from playwright.sync_api import expect

    lab.finished_run()
    server = lab.server
    data = server.zeroshot(f"studies/{STUDY}")
    assert len(data["chart"]["rounds"]) >= ITERATIONS, "a point per round"
    candidates = set(data["chart"]["candidate_ids"])  # a re-measure round names the incumbent
    assert len(candidates) > ITERATIONS // 2
    artifacts = ARTIFACTS / "dashboard"
    with browser_page(artifacts) as page:
        dashboard = open_dashboard(page, server, STUDY)
        best = dashboard.locator(".zs-chart-best")
        expect(best.locator(".scatterlayer path.point").first).to_be_visible(timeout=60_000)
        page.screenshot(path=str(artifacts / "dashboard.png"))
        dashboard.screenshot(path=str(artifacts / "dashboard-full.png"))
        for chart in ("parcoords", "slice", "importance", "contour"):
            shown = dashboard.locator(f".zs-chart-{chart}")
            if shown.count():
                shown.first.scroll_into_view_if_needed()
                shown.first.screenshot(path=str(artifacts / f"chart-{chart}.png"))

        # a candidate's point (the last drawn): its hover label names it, a click opens it
        best.scroll_into_view_if_needed()
        traces = best.evaluate(POINT_CENTRES_JS)
        drawn = [centre for trace in traces for centre in trace if centre is not None]
        assert drawn, f"no point drawn in the best-so-far chart: {traces}"
        x, y = drawn[-1]
        page.mouse.move(x - 30, y - 30)
        page.mouse.move(x, y, steps=5)
        hover = best.locator(".hoverlayer .hovertext")
        expect(hover.first).to_be_visible(timeout=10_000)
        label: list[str] = hover.first.evaluate(
            "h => { const lines = Array.from(h.querySelectorAll('tspan.line'));"
            " return (lines.length ? lines : [h]).map(t => t.textContent); }"
        )
        named = re.fullmatch(r"round (\d+) · (\S+)", label[0].strip())
        page.screenshot(path=str(artifacts / "hover.png"))
        assert named, f"the hover label names no candidate: {label!r}"
        hovered = named[2]
        assert hovered in candidates, f"{hovered} is none of the chart's {sorted(candidates)}"

        page.mouse.click(x, y)
        candidate = page.locator(f".zs-candidate[data-candidate='{hovered}']")
        expect(candidate).to_be_visible(timeout=30_000)
        expect(candidate).to_contain_text(hovered)
        detail = server.zeroshot(f"studies/{STUDY}/candidates/{hovered}")
        assert detail["candidate_id"] == hovered
        candidate.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "candidate.png"))


def threshold(metrics: list[float]) -> str:
    """A value between two of the metrics, near their middle, written plainly."""
    distinct = sorted(set(metrics))
    assert len(distinct) >= 2, f"the study's candidates all measured {distinct}"
    middle = len(distinct) // 2
    return f"{(distinct[middle - 1] + distinct[middle]) / 2:.9f}"


def test_the_runs_table_filters_by_an_expression(lab: Lab) -> None:
    from playwright.sync_api import expect

    lab.finished_run()
    server = lab.server
    candidates = server.zeroshot(f"studies/{STUDY}")["candidates"]
    metrics = [c["metric"] for c in candidates if c["metric"] is not None]
    x = threshold(metrics)
    kept = sum(1 for metric in metrics if metric < float(x))
    assert 0 < kept < len(candidates)
    artifacts = ARTIFACTS / "dashboard"
    with browser_page(artifacts) as page:
        dashboard = open_dashboard(page, server, STUDY)
        table = dashboard.locator(".zs-runs-table")
        rows = table.locator("tr.zs-row")
        expect(rows).to_have_count(len(candidates), timeout=60_000)
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "table.png"))
        # no harness of this run reported usage: its empty columns start hidden, choosable
        assert all(c["cost_usd"] is None and c["tokens"] is None for c in candidates)
        for empty in ("cost_usd", "tokens"):
            expect(table.locator(f"th[data-column='{empty}']")).to_have_count(0)
        expect(table.locator("th[data-column='metric']")).to_have_count(1)
        table.locator(".zs-columns summary").click()
        chooser = table.locator(".zs-column-choice[data-column='tokens']")
        expect(chooser).to_contain_text("(empty)")
        chooser.locator("input").check()
        expect(table.locator("th[data-column='tokens']")).to_have_count(1)
        chooser.locator("input").uncheck()
        table.locator(".zs-columns summary").click()

        box = dashboard.locator(".zs-filter-input")
        box.fill(f"metric < {x}")
        box.press("Enter")
        expect(rows).to_have_count(kept, timeout=10_000)
        expect(dashboard.locator(".zs-filter-error")).to_have_text("")
        page.screenshot(path=str(artifacts / "table-filtered.png"))

        box.fill("")
        box.press("Enter")
        expect(rows).to_have_count(len(candidates), timeout=10_000)
        box.fill("metric < < 1")
        box.press("Enter")
        expect(dashboard.locator(".zs-filter-error")).to_be_visible(timeout=10_000)
        expect(rows).to_have_count(len(candidates))
        page.screenshot(path=str(artifacts / "table-filter-error.png"))
        no_kernels(server)


def test_notebook_7s_tree_page_offers_the_studies_panel(lab: Lab) -> None:
    """Notebook 7 (its tree page, no notebook open): View ▸ Activate Command Palette lists
    ``zeroshot: Show Studies`` (``zeroshot:open-studies``); choosing it shows the Studies
    panel, which lists the study with its incumbent."""
    from playwright.sync_api import expect

    lab.finished_run()
    artifacts = ARTIFACTS / "notebook-tree"
    scratch = lab.workspace.parent / "notebook-tree"
    scratch.mkdir(exist_ok=True)
    with jupyter_server("notebook", lab.workspace, scratch) as server:
        require_the_lab_extension(server)
        with browser_page(artifacts) as page:
            page.goto(server.home_url())
            expect(page.locator(".jp-DirListing")).to_be_visible(timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="View").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Activate Command Palette").first.click()
            search = page.locator(".lm-CommandPalette-input")
            expect(search).to_be_visible(timeout=30_000)
            search.fill("zeroshot")
            offered = page.locator(".lm-CommandPalette-item", has_text="zeroshot: Show Studies")
            expect(offered).to_have_count(1, timeout=30_000)
            page.screenshot(path=str(artifacts / "palette.png"))
            offered.click()
            panel = page.locator(f"#{PANEL}")
            expect(panel).to_be_visible(timeout=30_000)
            expect(panel.locator(".zs-panel-workspace")).to_contain_text(str(lab.workspace))
            row = panel.locator(f".zs-study-row[data-study='{STUDY}']")
            expect(row).to_be_visible(timeout=60_000)
            expect(row.locator(".zs-study-incumbent")).to_contain_text(f"incumbent {STUDY} = ")
            page.screenshot(path=str(artifacts / "studies-panel.png"))
            no_kernels(server)
