"""``RunMonitor`` and ``RunBrowser`` on real runs: followed live through the ledger, opened
on a finished run, on a run the CLI started, stopped with the Stop button."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from workbench_support import (
    PNG_SIGNATURE,
    TASK,
    ResearchRun,
    finished_run,
    research_workspace,
    start_research,
    wait_for,
)
from zeroshot_widgets import RunBrowser, RunFeed, RunMonitor

from zeroshot_kernel.batch.store import BatchOptions
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult
from zeroshot_kernel.research.views import load_research_view
from zeroshot_kernel.templates import TemplateOptions, expand_template

ROUNDS = 2


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> ResearchRun:
    """A two-round run, just started (the monitor test follows it to its end)."""
    return start_research(research_workspace(tmp_path_factory.mktemp("live")), ROUNDS)


def test_the_monitor_follows_a_real_run_to_its_end(live: ResearchRun) -> None:
    monitor = RunMonitor(live.client, live.run.id, interval_s=0.1)
    assert monitor.terminal is None and monitor.polling
    seen: list[int] = []
    monitor.progress.observe(lambda change: seen.append(change["new"]), names="value")

    wait_for(lambda: monitor.phase == "running", what="the controller to start")
    assert monitor.resume_run() is False  # a live controller holds the run
    assert "is held by controller" in monitor.message.value

    monitor.join(timeout=180)
    assert not monitor.polling
    assert monitor.phase == "finished"
    assert isinstance(monitor.terminal, SucceededResult)
    # The bar only moves forward, to the last round (two rounds may land between polls
    # on a busy machine, and the run may be ahead of the monitor's first poll).
    assert seen == sorted(set(seen)) and seen[-1] == ROUNDS
    assert (monitor.progress.value, monitor.progress.max) == (ROUNDS, ROUNDS)
    assert monitor.progress.bar_style == "success"
    assert f"{ROUNDS} / {ROUNDS} rounds" == monitor.progress_label.value
    assert [row.round for row in monitor.table.rows] == [1, 2]
    assert monitor.table.value.count("<tr class=") == ROUNDS
    assert bytes(monitor.chart.value)[:8] == PNG_SIGNATURE
    assert "succeeded" in monitor.phase_html.value
    assert monitor.view.incumbent is not None
    assert monitor.view.incumbent.candidate_id in monitor.card.value
    assert "finished  succeeded" in monitor.log_tail.value
    assert monitor.stop_button.disabled and monitor.resume_button.disabled
    assert monitor.chart.metric == "rosenbrock"  # read from the task folder


def test_a_monitor_opened_later_or_elsewhere_looks_the_same() -> None:
    done = finished_run()
    here = RunMonitor(done.client, done.run.id)
    assert not here.polling and here.phase == "finished"
    # another process's view: a fresh client on the same ledger, no shared objects
    other = RunMonitor(Client(done.client.url, workspace=str(done.workspace)), done.run.id,
                       autostart=False)
    for widget in ("phase_html", "progress_label", "card", "table", "chart", "log_tail"):
        assert getattr(here, widget).value == getattr(other, widget).value, widget
    assert not other.refresh()  # nothing new: the run has ended
    assert here.resume_run() is False and "already finished" in here.message.value
    here.close()
    other.close()


def test_the_feed_reads_only_the_events_after_its_cursor() -> None:
    done = finished_run()
    feed = RunFeed(done.client.ledger, done.run.id, tail_lines=5)
    first = feed.poll()
    assert first.new_events > 0 and first.rounds_added == 2 and first.phase == "finished"
    assert feed.view == load_research_view(done.client.ledger, done.run.id)
    assert len(feed.log_tail().splitlines()) == 5
    again = feed.poll()
    assert (again.new_events, again.rounds_added) == (0, 0)
    assert feed.snapshot is not None and feed.cursor == feed.snapshot.cursor


def test_the_stop_button_stops_a_run_the_cli_started(tmp_path: Path) -> None:
    workspace = research_workspace(tmp_path)
    expansion = expand_template("auto-research", TemplateOptions(task=TASK, iterations=50))
    (workspace / "graph.json").write_text(json.dumps(expansion.graph))
    (workspace / "input.json").write_text(json.dumps(expansion.input))
    (workspace / "plan.json").write_text(json.dumps(expansion.runtime))
    started = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "run", "graph.json", "--input", "@input.json",
         "--runtime", "@plan.json", "--detach", "--json"],
        capture_output=True, text=True, cwd=workspace, timeout=60, check=True,
    )
    run_id = json.loads(started.stdout)["runId"]
    monitor = RunMonitor(Client(workspace=str(workspace)), run_id, interval_s=0.1)
    assert monitor.progress.max == 50 and monitor.header.value.count(run_id) == 1
    wait_for(lambda: "started   scout" in monitor.log_tail.value, what="the first scouts")

    monitor.stop_button.click()
    assert "stop requested; the run&#x27;s controller is closing it" in monitor.message.value
    monitor.join(timeout=60)
    assert monitor.phase == "finished"
    assert monitor.terminal == FailedResult(status="failed", reason="force_stopped")
    assert "failed: force_stopped" in monitor.phase_html.value
    assert monitor.progress.bar_style == "danger"
    assert monitor.stop_button.disabled
    assert monitor.stop_run() == "already_finished"


def test_the_browser_lists_runs_and_opens_a_monitor_on_selection() -> None:
    done = finished_run()
    browser = RunBrowser(done.client)
    assert done.run.id in [value for _, value in browser.runs.options]
    label = dict((value, text) for text, value in browser.runs.options)[done.run.id]
    assert "auto-research rosenbrock" in label and "succeeded" in label
    browser.runs.value = done.run.id
    assert browser.monitor is not None and browser.monitor.run_id == done.run.id
    assert browser.monitor_box.children == (browser.monitor,)
    assert browser.monitor.phase == "finished"
    browser.refresh()
    assert browser.runs.value == done.run.id
    assert browser.open_run(done.run.id) is browser.monitor


def test_a_monitor_on_a_plain_graph_shows_its_phase_and_log_but_no_rounds(
    tmp_path: Path,
) -> None:
    (tmp_path / ".zeroshot").mkdir()
    (tmp_path / "examples").mkdir()
    for name in ("headline.yaml", "headline_workers.py", "headline-runtime.json"):
        (tmp_path / "examples" / name).write_bytes(
            (Path(__file__).parent.parent / "examples" / name).read_bytes())
    client = Client(workspace=str(tmp_path))
    run = client.submit(tmp_path / "examples" / "headline.yaml", input={"topic": "logs"},
                        title="headline",
                        runtime=json.loads((tmp_path / "examples" / "headline-runtime.json")
                                           .read_text()))
    run.wait(timeout=60)
    monitor = RunMonitor(client, run.id, autostart=False)
    assert not monitor.is_research and monitor.terminal is not None
    assert ">succeeded</span>" in monitor.phase_html.value
    hidden = [monitor.progress, monitor.progress_label, monitor.table, monitor.research_panel]
    assert all(part.layout.display == "none" for part in hidden)
    assert "topic" not in monitor.header.value and "headline" in monitor.header.value

    done = finished_run()
    research = RunMonitor(done.client, done.run.id, autostart=False)
    assert research.is_research
    assert all(part.layout.display != "none" for part in (research.progress, research.table))


def test_the_browser_lists_batches_and_shows_the_items_of_the_one_selected(
    tmp_path: Path,
) -> None:
    from zeroshot_kernel.batch import BatchStore

    ledger = tmp_path / "ledger.db"
    client = Client(ledger, workspace=str(tmp_path))
    with BatchStore(client.url) as store:
        batch_id = store.create("/nb/research.ipynb", str(tmp_path), [{"x": 1}, {"x": 2}],
                                BatchOptions())
        store.start(batch_id, 0)
        store.settle(batch_id, 0, status="failed", duration_s=1.5, output=None,
                     error="the kernel died while a cell ran", results=None)
    browser = RunBrowser(client)
    (label,) = [text for text, value in browser.batches.options if value == batch_id]
    assert "1 failed, 1 pending of 2" in label
    browser.batches.value = batch_id
    assert "the kernel died while a cell ran" in browser.batch_html.value
    assert browser.batch_html.value.count("<tr class=\"zeroshot-batch-") == 2
    browser.close()
