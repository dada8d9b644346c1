"""``RunMonitor`` and ``RunBrowser`` on real runs: followed live through the ledger, opened
on a finished run, on a run the CLI started, stopped with the Stop button and continued with
Continue, over 100 rounds, and displayed with its static snapshot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import wait_until
from workbench_support import (
    FAST_TASK,
    PNG_SIGNATURE,
    ResearchRun,
    fast_task,
    finished_run,
    research_workspace,
    start_research,
)
from zeroshot_widgets import RunBrowser, RunFeed, RunMonitor
from zeroshot_widgets.report import build_report

from zeroshot_kernel.auto_research.studies.catalog import list_studies, study_of_run
from zeroshot_kernel.auto_research.studies.table import study_rows
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.batch.storage import BatchOptions
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: real research runs, up to 100 rounds
pytestmark = pytest.mark.slow

ROUNDS = 2
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def start_fast(workspace: Path, iterations: int) -> ResearchRun:
    client = Client(workspace=str(workspace))
    expansion = expand_template(
        "auto-research", TemplateOptions(task=FAST_TASK, iterations=iterations)
    )
    run = client.submit(
        expansion.graph,
        input=expansion.input,
        runtime=expansion.runtime,
        title=f"auto-research {FAST_TASK}",
    )
    return ResearchRun(workspace, client, run)


@pytest.fixture(scope="module")
def hundred(tmp_path_factory: pytest.TempPathFactory) -> ResearchRun:
    """A real run of 100 rounds on the fast task, finished."""
    started = start_fast(fast_task(tmp_path_factory.mktemp("hundred")), 100)
    started.run.wait(timeout=600)
    return started


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> ResearchRun:
    """A two-round run, just started (the monitor test follows it to its end)."""
    return start_research(research_workspace(tmp_path_factory.mktemp("live")), ROUNDS)


def test_the_monitor_follows_a_real_run_to_its_end(live: ResearchRun) -> None:
    monitor = RunMonitor(live.client, live.run.id, interval_s=0.1)
    assert monitor.terminal is None and monitor.polling
    seen: list[int] = []
    monitor.progress.observe(lambda change: seen.append(change["new"]), names="value")

    wait_until(lambda: monitor.phase == "running", 60, "the controller to start")
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
    other = RunMonitor(
        Client(done.client.url, workspace=str(done.workspace)), done.run.id, autostart=False
    )
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


def test_the_stop_button_stops_a_run_the_cli_started_and_continue_carries_on(
    tmp_path: Path,
) -> None:
    workspace = fast_task(tmp_path)
    expansion = expand_template("auto-research", TemplateOptions(task=FAST_TASK, iterations=12))
    (workspace / "graph.json").write_text(json.dumps(expansion.graph))
    (workspace / "input.json").write_text(json.dumps(expansion.input))
    (workspace / "plan.json").write_text(json.dumps(expansion.runtime))
    started = subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel",
            "run",
            "graph.json",
            "--input",
            "@input.json",
            "--runtime",
            "@plan.json",
            "--detach",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=workspace,
        timeout=60,
        check=True,
    )
    run_id = json.loads(started.stdout)["runId"]
    client = Client(workspace=str(workspace))
    monitor = RunMonitor(client, run_id, interval_s=0.1)
    assert monitor.progress.max == 12 and monitor.header.value.count(run_id) == 1
    assert monitor.continue_button.layout.display == "none"
    wait_until(lambda: monitor.view.rounds, 120, "a reviewed round")  # history to continue
    # the live view's heartbeat (set just after each poll's values)
    wait_until(lambda: "zeroshot-stale-note" in monitor.liveness.value, 30, "a heartbeat")

    monitor.stop_button.click()
    assert "stop requested; the run&#x27;s controller is closing it" in monitor.message.value
    monitor.join(timeout=60)
    assert monitor.phase == "finished"
    assert monitor.terminal == FailedResult(status="failed", reason="force_stopped")
    # a neutral "stopped": not a red failure, no cause, no lingering "stop requested"
    assert ">stopped</span>" in monitor.phase_html.value
    assert "failed" not in monitor.phase_html.value + monitor.header.value
    assert "#d62728" not in monitor.phase_html.value
    assert monitor.progress.bar_style == ""
    assert "stop requested" not in monitor.message.value
    assert "<br>run stopped</div>" in monitor.card.value  # the card says so too
    (stopped_row,) = study_rows(client)
    assert stopped_row.status == "stopped"  # and the study browser
    assert monitor.stop_button.disabled and monitor.resume_button.disabled
    assert monitor.stop_run() == "already_finished"
    assert monitor.continuable and monitor.continue_button.layout.display is None
    # Continue is live: the view keeps beating (a view whose kernel is gone greys it out)
    assert monitor.polling
    beats = monitor.liveness.value
    wait_until(lambda: monitor.liveness.value != beats, 30, "the next heartbeat")
    assert "zeroshot-stale-note" in monitor.liveness.value
    assert "zeroshot-live-only" in monitor.continue_button._dom_classes
    done = len(monitor.view.rounds)

    monitor.continue_button.click()  # a new run on the same study, followed here
    assert monitor.run_id != run_id, monitor.message.value
    assert f"as {monitor.run_id} (after {run_id}" in monitor.message.value
    assert study_of_run(client, monitor.run_id) == study_of_run(client, run_id) == FAST_TASK
    admitted, before = client.admitted(monitor.run_id), client.admitted(run_id)
    assert admitted["initialInput"]["task"] == before["initialInput"]["task"]
    assert admitted["runtime"]["harness"] == before["runtime"]["harness"]
    assert monitor.header.value.count(monitor.run_id)
    assert not monitor.continuable and monitor.continue_button.layout.display == "none"
    # the continued view starts from the study: its rounds, incumbent and count
    assert monitor.view.earlier == done and len(monitor.view.rounds) >= done
    assert monitor.progress.max == 12 and monitor.progress_label.value.startswith(
        f"{len(monitor.view.rounds)} / 12 rounds"
    )
    assert "no reviewed rounds yet" not in monitor.card.value
    assert [row.round for row in monitor.table.rows][:done] == list(range(1, done + 1))
    monitor.join(timeout=300)
    assert isinstance(monitor.terminal, SucceededResult)
    assert ">succeeded</span>" in monitor.phase_html.value
    assert len(monitor.view.run_rounds) == 12 - done and len(monitor.view.rounds) == 12
    # the study's rounds go on where the stopped run's ended
    assert [row.round for row in monitor.table.rows] == list(range(1, 13))
    assert [r.run_id for r in client.runs()] == [run_id, monitor.run_id]
    # the round in progress at Stop was done again, not skipped: every count says 12
    (continued,) = study_rows(client)
    (summary,) = list_studies(workspace)
    assert continued.rounds == summary.rounds == 12
    reopened = RunMonitor(client, monitor.run_id, autostart=False)  # later, elsewhere
    assert reopened.view == monitor.view and reopened.progress_label.value.startswith(
        "12 / 12 rounds"
    )
    reopened.close()
    monitor.close()


def test_a_failed_run_says_why_in_the_header(tmp_path: Path) -> None:
    workspace = fast_task(tmp_path)
    (workspace / FAST_TASK / "candidate" / "objective.py").write_text(
        "raise SystemExit('the objective broke on purpose')\n"
    )
    started = start_fast(workspace, 2)
    started.run.wait(timeout=180)
    monitor = RunMonitor(started.client, started.run.id, autostart=False)
    assert isinstance(monitor.terminal, FailedResult)
    assert f"failed: {monitor.terminal.reason}" in monitor.phase_html.value
    # explain_failure's lines, in the header: the node, its error, the worker's own words
    assert "(node measure: crash" in monitor.header.value
    assert "the objective broke on purpose" in monitor.header.value
    assert not monitor.continuable and monitor.continue_button.layout.display == "none"
    monitor.close()


def test_a_hundred_rounds_scroll_one_line_each_newest_first_as_in_the_report(
    hundred: ResearchRun,
) -> None:
    monitor = RunMonitor(hundred.client, hundred.run.id, autostart=False)
    assert len(monitor.view.rounds) == 100
    table = monitor.table.value
    box = re.match(
        r'<div class="zeroshot-rounds-box" style="max-height:(\d+)px;overflow:auto', table
    )
    assert box is not None and int(box.group(1)) <= 400, table[:200]
    assert table.endswith("</div>") and table.count("zeroshot-rounds-box") == 1
    assert table.count('<tr class="zeroshot-') == 100  # one row per round, in the box
    assert table.count('<details class="zeroshot-round-details">') == 100  # on demand
    assert table.count("<tr") == 101  # and the header: no cards, no extra rows
    shown = [int(n) for n in re.findall(r'<tr class="zeroshot-\w+"[^>]*><td[^>]*>(\d+)<', table)]
    assert shown == list(range(100, 0, -1))
    report = build_report(hundred.client, hundred.run.id).table_html
    assert [
        int(n) for n in re.findall(r'<tr class="zeroshot-\w+"[^>]*><td[^>]*>(\d+)<', report)
    ] == shown
    assert "min-width:22em" in table  # the reason column is not squeezed
    monitor.close()


def test_a_displayed_monitor_leaves_a_static_snapshot_in_its_output(tmp_path: Path) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    live = start_research(research_workspace(tmp_path), 1)
    monitor = RunMonitor(live.client, live.run.id, interval_s=0.1)
    with capture_output() as captured:
        display(monitor)
        monitor.join(timeout=180)
    first, *updates = captured.outputs
    assert WIDGET_VIEW in first.data  # the live view, with its fallbacks
    assert {"text/html", "image/png", "text/plain"} <= set(first.data)
    assert "Re-run the cell" in first.data["text/html"]
    (final,) = updates  # once, at the end: the snapshot takes the widget's place
    assert final.update and final.transient == first.transient
    assert WIDGET_VIEW not in final.data
    snapshot = final.data["text/html"]
    assert ">succeeded</span>" in snapshot and "1 / 1 rounds" in snapshot
    assert 'src="data:image/png;base64,' in snapshot and "zeroshot-rounds-box" in snapshot
    assert snapshot.count('<tr class="zeroshot-') == 1 and "Stop" not in snapshot
    assert final.data["image/png"]
    # a finished run's monitor displays as its snapshot straight away
    with capture_output() as again:
        display(RunMonitor(live.client, live.run.id))
    (only,) = again.outputs
    assert WIDGET_VIEW not in only.data and ">succeeded</span>" in only.data["text/html"]


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
            (Path(__file__).parents[2] / "examples" / name).read_bytes()
        )
    client = Client(workspace=str(tmp_path))
    run = client.submit(
        tmp_path / "examples" / "headline.yaml",
        input={"topic": "logs"},
        title="headline",
        runtime=json.loads((tmp_path / "examples" / "headline-runtime.json").read_text()),
    )
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
        batch_id = store.create(
            "/nb/research.ipynb", str(tmp_path), [{"x": 1}, {"x": 2}], BatchOptions()
        )
        store.start(batch_id, 0)
        store.settle(
            batch_id,
            0,
            status="failed",
            duration_s=1.5,
            output=None,
            error="the kernel died while a cell ran",
            results=None,
        )
    browser = RunBrowser(client)
    (label,) = [text for text, value in browser.batches.options if value == batch_id]
    assert "1 failed, 1 pending of 2" in label
    browser.batches.value = batch_id
    assert "the kernel died while a cell ran" in browser.batch_html.value
    assert browser.batch_html.value.count('<tr class="zeroshot-batch-') == 2
    browser.close()


def test_continue_keeps_the_harness_model_and_server_of_the_stopped_run() -> None:
    from zeroshot_widgets.monitor import continuation_options

    chosen = TemplateOptions(
        task="branin",
        iterations=9,
        study="branin-long",
        harness="openai",
        model="local",
        base_url="http://127.0.0.1:8080/v1",
        max_tokens=512,
    )
    expansion = expand_template("auto-research", chosen)
    again = continuation_options(
        {"initialInput": expansion.input, "runtime": expansion.runtime}, iterations=4
    )
    assert again == TemplateOptions(
        task="branin",
        iterations=4,
        study="branin-long",
        harness="openai",
        model="local",
        base_url="http://127.0.0.1:8080/v1",
        max_tokens=512,
    )
    same = expand_template("auto-research", again)
    assert same.runtime == expansion.runtime and same.input["study"] == "branin-long"
    with pytest.raises(ValueError, match="not an auto-research run"):
        continuation_options({"initialInput": {"topic": "x"}, "runtime": {}})


def test_the_count_includes_rounds_a_study_recorded_through_another_ledger(
    tmp_path: Path,
) -> None:
    """A study's rounds are numbered across ledgers (its records live in the workspace):
    the monitor counts them the same way, so its label agrees with the round numbers."""
    fast_task(tmp_path)
    (tmp_path / ".zeroshot").mkdir(exist_ok=True)
    command = [sys.executable, "-m", "zeroshot_kernel", "research", "run", FAST_TASK]
    for ledger in (["--ledger", str(tmp_path / "other.db")], []):
        ran = subprocess.run(
            [*command, "--iterations", "1", *ledger],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
    client = Client(workspace=str(tmp_path))
    (summary,) = client.runs()  # the second run, the only one in this ledger
    monitor = RunMonitor(client, summary.run_id, autostart=False)
    assert [row.round for row in monitor.table.rows] == [2]  # numbered after the other's
    assert monitor.progress_label.value.startswith("2 / 2 rounds")
    assert (monitor.progress.value, monitor.progress.max) == (2, 2)
    monitor.close()
