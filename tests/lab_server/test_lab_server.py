"""The Jupyter server extension (zeroshot_kernel.lab_server) against a real Jupyter server
(pytest-jupyter's fixtures) and real auto-research runs on rosenbrock.

The root dir is a workspace whose 2-round run is started once for the module (the first
test follows it live until it ends); ``stopping/`` inside it is a second workspace where a
longer run is stopped and then continued. The fixtures are imported here rather than
registered as a plugin so their autouse event loop stays in this module.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tornado.httpclient
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures, module-local)
from workbench_support import ResearchRun, research_workspace, start_research

from zeroshot_kernel.auto_research import REMEASURE
from zeroshot_kernel.auto_research.studies.catalog import list_studies
from zeroshot_kernel.auto_research.studies.export import Study
from zeroshot_kernel.auto_research.views import RoundView
from zeroshot_kernel.client import Client
from zeroshot_kernel.lab_server.run_payloads import round_view_row
from zeroshot_kernel.lab_server.study_payloads import round_row
from zeroshot_kernel.ledger.events import NodeCompleted, NodeStarted
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: a real Jupyter server over real research runs
pytestmark = pytest.mark.slow

Fetch = Callable[..., Any]
API = ("zeroshot", "api")
TIMEOUT_S = 240.0
JARGON = ("challenge:remeasure", "no_metric", "reconsidered", "supported non-adoption")
"""Protocol words no payload the extension shows may carry (round_words says them plainly)."""


@pytest.fixture(scope="module")
def module_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResearchRun]:
    """The root dir: a workspace with a 2-round run, started (not awaited)."""
    root = research_workspace(tmp_path_factory.mktemp("lab") / "root")
    started = start_research(root, iterations=2)
    yield started
    started.client.close()


@pytest.fixture
def jp_root_dir(module_root: ResearchRun) -> Path:  # overrides pytest-jupyter's
    return module_root.workspace


@pytest.fixture
def jp_server_config() -> dict[str, Any]:  # overrides pytest-jupyter's
    return {"ServerApp": {"jpserver_extensions": {"zeroshot_kernel.lab_server": True}}}


@pytest.fixture
def finished(module_root: ResearchRun) -> ResearchRun:
    module_root.run.wait(timeout=TIMEOUT_S)
    return module_root


@pytest.fixture
def api(jp_fetch: Fetch, jp_asyncio_loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
    """``api("runs", run_id)`` -> (status, JSON body); never raises on a 4xx/5xx."""

    def call(
        *parts: str,
        method: str = "GET",
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        options: dict[str, Any] = {"method": method, "params": params, "headers": headers}
        if method == "POST":
            options["body"] = b""
        # a run started in this thread (asyncio.run) unsets the current loop; tornado's
        # client needs it back
        asyncio.set_event_loop(jp_asyncio_loop)
        try:
            response = jp_asyncio_loop.run_until_complete(jp_fetch(*API, *parts, **options))
        except tornado.httpclient.HTTPClientError as error:
            assert error.response is not None
            response = error.response
        body = response.body.decode("utf-8")
        if response.headers.get("Content-Type", "").startswith("application/json"):
            return response.code, json.loads(body)
        return response.code, body

    return call


def poll(api: Callable[..., Any], run_id: str, done: Callable[[dict[str, Any]], bool], **kw: Any):
    """The run's state once ``done(state)`` holds (fails after TIMEOUT_S)."""
    deadline = time.monotonic() + TIMEOUT_S
    seen: list[dict[str, Any]] = []
    while True:
        status, state = api("runs", run_id, **kw)
        assert status == 200, state
        seen.append(state)
        if done(state):
            return state, seen
        assert time.monotonic() < deadline, f"timed out; last state {state['phase']}"
        time.sleep(0.2)


def test_a_live_run_is_followed_until_it_ends(api, module_root: ResearchRun) -> None:
    live = start_research(research_workspace(module_root.workspace / "live"), iterations=2)
    run_id, where = live.run.id, {"workspace": str(live.workspace)}
    state, seen = poll(
        api, run_id, lambda s: s["phase"] in ("succeeded", "failed", "stopped"), params=where
    )
    assert seen[0]["phase"] in ("admitted", "running"), "the first poll should see it live"
    assert seen[0]["can_stop"] is True and seen[0]["can_continue"] is False
    assert state["phase"] == "succeeded" and state["can_stop"] is False
    assert state["is_research"] and state["template"] == "auto-research"
    assert state["study"] == "rosenbrock" and state["metric"] == "rosenbrock"
    assert state["direction"] == "minimize"
    assert state["rounds_done"] == state["rounds_total"] == 2
    assert state["progress_text"] == "2 / 2 rounds"
    assert state["round_in_progress"] is None and state["in_flight"] == []
    assert len(state["rounds"]) == 2 and [r["round"] for r in state["rounds"]] == [1, 2]
    assert all(r["run_id"] == run_id for r in state["rounds"])
    chart = state["chart"]
    assert chart["rounds"] == [1, 2] and chart["earlier"] == 0
    assert len(chart["values"]) == len(chart["best_so_far"]) == len(chart["adopted"]) == 2
    assert state["incumbent"]["candidate_id"] == state["rounds"][-1]["incumbent_id"] or any(
        r["adopted"] for r in state["rounds"]
    )
    assert state["log_tail"] and state["cause"] is None and state["continued_by"] is None
    assert state["workspace"] == str(live.workspace.resolve())
    # the polls in between said where it was, in the monitor's words
    running = [s for s in seen if s["phase"] == "running" and s["round_in_progress"]]
    assert running and "in progress" in running[0]["progress_text"]
    assert [s["rounds_done"] for s in seen] == sorted(s["rounds_done"] for s in seen)
    live.client.close()


def test_studies_agree_with_the_cli(api, finished: ResearchRun) -> None:
    status, reply = api("studies")
    assert status == 200
    assert reply["workspace"] == str(finished.workspace.resolve())
    (row,) = reply["studies"]
    (summary,) = list_studies(finished.workspace)
    assert row["name"] == summary.name == "rosenbrock"
    assert row["rounds"] == summary.rounds == 2  # reviewed rounds, not the baseline
    assert row["incumbent"]["candidate_id"] == summary.incumbent_id
    assert row["incumbent"]["metric"] == pytest.approx(summary.incumbent_metric)
    assert row["latest_run"] == finished.run.id and row["running"] is False
    assert row["metric"] == "rosenbrock" and row["direction"] == "minimize"
    assert row["updated"]
    cli = subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "research", "studies", "--json"],
        cwd=finished.workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (listed,) = json.loads(cli.stdout)
    assert listed["rounds"] == row["rounds"] and listed["incumbentId"] == summary.incumbent_id


def test_study_dashboard(api, finished: ResearchRun) -> None:
    status, board = api("studies", "rosenbrock")
    assert status == 200, board
    assert board["name"] == "rosenbrock" and board["direction"] == "minimize"
    chart, rounds = board["chart"], board["rounds"]
    assert chart["rounds"] == [r["round"] for r in rounds] == [1, 2]
    for series in ("values", "best_so_far", "adopted", "candidate_ids"):
        assert len(chart[series]) == 2
    assert chart["earlier"] == 0
    assert board["incumbent"]["candidate_id"] == list_studies(finished.workspace)[0].incumbent_id
    for row in rounds:
        assert row["disposition"].startswith(("adopted", "kept the incumbent", "re-measured"))
        assert said_once(row["decision"], row["disposition"])
        assert row["run_id"] == finished.run.id
    assert not [word for word in JARGON if word in json.dumps(board)]
    assert {c["candidate_id"] for c in board["candidates"]} >= {r["candidate_id"] for r in rounds}
    assert {p["name"] for p in board["params"]} == {"x", "y"}
    assert board["runs"] == [finished.run.id]
    assert board["insights"] and all(isinstance(line, str) for line in board["insights"])
    total = sum(i["importance"] for i in board["importance"])
    assert not board["importance"] or total == pytest.approx(1.0)


def test_candidate_detail(api, finished: ResearchRun) -> None:
    _, board = api("studies", "rosenbrock")
    chosen = board["rounds"][0]["candidate_id"]
    status, detail = api("studies", "rosenbrock", "candidates", chosen)
    assert status == 200, detail
    assert detail["candidate_id"] == chosen and detail["round"] == 1
    assert detail["run_id"] == finished.run.id
    assert detail["approach"] and detail["decision"] and detail["review"]
    assert isinstance(detail["curve"], list) and isinstance(detail["seeds"], int)
    status, missing = api("studies", "rosenbrock", "candidates", "c999")
    assert status == 404 and "c999" in missing["error"]


def test_export_csv(api, finished: ResearchRun) -> None:
    study = Study.open(finished.workspace, "rosenbrock")
    status, text = api("studies", "rosenbrock", "export.csv")  # the candidates, as types.ts
    assert status == 200 and text == study.csv_text("candidates")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and "candidate_id" in rows[0] and "metric_mean" in rows[0]
    status, text = api("studies", "rosenbrock", "export.csv", params={"kind": "rounds"})
    assert status == 200 and text == study.csv_text("rounds")  # the study browser's export
    assert [int(r["round"]) for r in csv.DictReader(io.StringIO(text))] == [1, 2]
    status, body = api("studies", "rosenbrock", "export.csv", params={"kind": "bogus"})
    assert status == 400 and "error" in body


def test_runs_list(api, finished: ResearchRun) -> None:
    status, reply = api("runs")
    assert status == 200
    (row,) = reply["runs"]
    assert row["run_id"] == finished.run.id and row["phase"] == "succeeded"
    assert row["template"] == "auto-research" and row["study"] == "rosenbrock"
    assert row["created"] and row["ended"]


def test_unknown_study_and_run(api, finished: ResearchRun) -> None:
    status, body = api("studies", "nosuchstudy")
    assert status == 404 and body["studies"] == ["rosenbrock"] and "nosuchstudy" in body["error"]
    status, body = api("runs", "run-aaaaaaaaaaaa")
    assert status == 404 and "error" in body
    status, body = api("runs", "run-aaaaaaaaaaaa", "stop", method="POST")
    assert status == 404 and "error" in body
    status, body = api("nothing", "here")
    assert status == 404 and body == {"error": "no such endpoint"}


def test_continue_refused_for_a_run_that_was_not_stopped(api, finished: ResearchRun) -> None:
    status, body = api("runs", finished.run.id, "continue", method="POST")
    assert status == 409 and "stopped" in body["error"]


def test_workspace_outside_the_root_is_refused(api, finished: ResearchRun, tmp_path) -> None:
    for outside in (str(tmp_path), "/", str(finished.workspace / ".." / "..")):
        status, body = api("studies", params={"workspace": outside})
        assert status == 403 and "outside" in body["error"], outside
    status, body = api("runs", params={"workspace": "relative/path"})
    assert status == 400 and "absolute" in body["error"]
    status, body = api("runs", params={"workspace": str(finished.workspace / "no-such")})
    assert status == 400
    status, body = api("runs", params={"workspace": str(finished.workspace)})
    assert status == 200 and body["runs"]


@pytest.mark.parametrize(
    "parts",
    [
        ("studies", "x" * 5000),
        ("studies", ".."),
        ("studies", "..", "export.csv"),
        ("studies", "a\x00b"),
        ("studies", "ünïcødé-☃"),
        ("studies", "rounds"),
        ("studies", "rosenbrock", "candidates", "../../etc"),
        ("studies", "rosenbrock", "candidates", "c" * 5000),
        ("runs", "x" * 5000),
        ("runs", ".."),
        ("runs", "run-\x00"),
        ("runs", "run-☃"),
        ("runs", "%2e%2e"),
    ],
)
def test_hostile_path_params_get_json_4xx(api, finished: ResearchRun, parts) -> None:
    status, body = api(*parts)
    assert 400 <= status < 500, (status, body)
    assert (
        isinstance(body, dict)
        and isinstance(body["error"], str)
        and "Traceback" not in body["error"]
    )
    status, body = api(*parts[:2], "stop", method="POST") if parts[0] == "runs" else (400, {})
    assert 400 <= status < 500


def test_an_unauthenticated_request_is_refused(api, finished: ResearchRun) -> None:
    """Without Jupyter's token (none, or a wrong one) nothing is read and nothing is done."""
    stop = ("runs", finished.run.id, "stop")
    for header in ("", "token not-the-token"):
        for parts, method in ((("studies",), "GET"), (("runs",), "GET"), (stop, "POST")):
            status, body = api(*parts, method=method, headers={"Authorization": header})
            assert status in (401, 403), (parts, header, status)
            assert finished.run.id not in json.dumps(body)
    assert finished.client.run(finished.run.id).terminal.status == "succeeded"  # not stopped


def test_stop_then_continue(api, module_root: ResearchRun) -> None:
    workspace = research_workspace(module_root.workspace / "stopping")
    started = start_research(workspace, iterations=30)
    where = {"workspace": str(workspace)}
    old = started.run.id
    new = None
    try:
        poll(api, old, lambda s: s["rounds_done"] >= 1, params=where)
        status, reply = api("runs", old, "stop", method="POST", params=where)
        assert status == 200 and reply["run_id"] == old
        assert reply["message"] in (
            "stop requested; the run's controller is closing it",
            "closed (no controller was running it)",
        )
        stopped, _ = poll(api, old, lambda s: s["phase"] == "stopped", params=where)
        assert stopped["can_continue"] is True and stopped["can_stop"] is False
        assert stopped["continued_by"] is None and stopped["cause"] is None
        earlier = stopped["rounds_done"]
        assert earlier >= 1

        status, reply = api("runs", old, "continue", method="POST", params=where)
        assert status == 200, reply
        new = reply["run_id"]
        assert new != old and new in reply["message"]
        status, again = api("runs", old, "continue", method="POST", params=where)
        assert status == 409 and new in again["error"]

        _, after = api("runs", old, params=where)
        assert after["continued_by"] == new and after["can_continue"] is False

        status, state = api("runs", new, params=where)
        assert status == 200
        assert state["rounds_done"] >= earlier and state["chart"]["earlier"] == earlier
        assert state["chart"]["rounds"][:earlier] == list(range(1, earlier + 1))
        assert state["rounds_total"] == 30  # the study's count this run aims for
        assert state["rounds"][0]["run_id"] == old
        status, studies = api("studies", params=where)
        assert studies["studies"][0]["latest_run"] == new
    finally:
        client = Client(workspace=str(workspace))
        for run_id in (old, new):
            if run_id is not None:
                client.run(run_id).stop()
        for run_id in (old, new):
            if run_id is not None:
                client.run(run_id).wait(timeout=TIMEOUT_S)
        client.close()


def test_the_monitor_names_its_run_for_the_lab_renderer(finished: ResearchRun) -> None:
    from zeroshot_widgets.monitor import RUN_MIME, RunMonitor

    monitor = RunMonitor(finished.client, finished.run.id, autostart=False)
    try:
        expected = {"run_id": finished.run.id, "workspace": str(finished.workspace.resolve())}
        assert monitor.snapshot_bundle()[RUN_MIME] == expected
        assert monitor.snapshot_bundle(widget=False)[RUN_MIME] == expected
        bundle = monitor._repr_mimebundle_()
        assert bundle[RUN_MIME] == expected
        assert "application/vnd.jupyter.widget-view+json" in bundle and "text/html" in bundle
    finally:
        monitor.close()


def test_the_server_extension_imports_no_widgets() -> None:
    probe = (
        "import sys, zeroshot_kernel.lab_server.handlers, zeroshot_kernel.lab_server as m\n"
        "points = m._jupyter_server_extension_points()\n"
        "assert points == [{'module': 'zeroshot_kernel.lab_server'}], points\n"
        "ui = ('ipywidgets', 'matplotlib', 'zeroshot_widgets')\n"
        "print(sorted(n for n in ui if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def said_once(decision: str, words: str) -> bool:
    """``decision`` is ``words`` or ``words: why``, with the decision's words said once."""
    if decision == words:
        return True
    why = decision.removeprefix(words + ": ")
    return why != decision and not why.lower().startswith(
        ("kept the incumbent", "adopted", "re-measured", "not adopted", "supported non-adoption")
    )


def recorded_round(**fields: Any) -> dict[str, Any]:
    """A row of ``Study.rounds()`` (a rejected round unless ``fields`` say otherwise)."""
    return {
        "round": 3,
        "run_id": "run-aaaaaaaaaaaa",
        "candidate_id": "c004",
        "parent_id": "c001",
        "strategy": "exploration",
        "approach": "exploration:ei",
        "params": {"x": 1.0},
        "experiment_status": "ok",
        "metric": 2.5,
        "repeats": 3,
        "incumbent_id": "c001",
        "incumbent_metric": 2.0,
        "gain": -0.5,
        "noise_floor": 0.1,
        "effect_size": None,
        "gate_decision": "worse",
        "max_seeds": 9,
        "disposition": "reject",
        "adopted": False,
        "best_so_far": 2.0,
        "reason": "kept the incumbent: the change is worse: x moved",
        **fields,
    }


def round_view(**fields: Any) -> RoundView:
    """A reviewed round as the run's events give it (a rejected one unless ``fields`` say)."""
    base: dict[str, Any] = {
        "round": 3,
        "proposals": (),
        "measure_status": "measured",
        "parent_id": "c001",
        "candidate_id": "c004",
        "strategy": "exploration",
        "approach": "exploration:ei",
        "params": {"x": 1.0},
        "experiment_status": "ok",
        "metric": 2.5,
        "incumbent_id": "c001",
        "incumbent_metric": 2.0,
        "gain": -0.5,
        "noise_floor": 0.1,
        "effect_size": None,
        "evidence": "",
        "disposition": "reject",
        "justification": "not adopted: gain -0.5 against the noise floor 0.1",
        "verdict": "accepted",
        "reason": "kept the incumbent: the change is worse: x moved",
        "passes": 1,
        "reconsidered": False,
        "reconsideration_due": False,
    }
    return RoundView(**{**base, **fields})


def test_a_round_says_its_decision_once_in_plain_words() -> None:
    """The reviewer's reason starts with the decision's words ("kept the incumbent: ..."):
    the run monitor's and the dashboard's rows say them once; a re-measurement of the
    incumbent reads as one, never as ``challenge:remeasure``; a failed experiment's status
    is "no metric"."""
    for row in (round_view_row(round_view(), "run-a", 2.0), round_row(recorded_round())):
        assert row["disposition"] == "kept the incumbent"
        assert row["decision"] == "kept the incumbent: the change is worse: x moved"
        assert row["approach"] == "exploration:ei"
    again = {"approach": REMEASURE, "candidate_id": "c001", "parent_id": "c001"}
    remeasured = "kept the incumbent: this round measured it again"
    for row in (
        round_view_row(round_view(**again, reason=remeasured), "run-a", 2.0),
        round_row(recorded_round(**again, reason=remeasured)),
    ):
        assert row["disposition"] == "re-measured the incumbent c001"
        assert row["approach"] == "re-measured the incumbent c001"
        assert row["decision"] == "re-measured the incumbent c001: this round measured it again"
    justified = "adopted c004: gain 0.5 against the noise floor 0.1; the reviewer accepted"
    for row in (
        round_view_row(
            round_view(disposition="adopt", reason="", justification=justified), "run-a", 2.0
        ),
        round_row(recorded_round(disposition="adopt", adopted=True, reason=justified)),
    ):
        assert row["decision"] == (
            "adopted: gain 0.5 against the noise floor 0.1; the reviewer accepted"
        )
    failed = {"experiment_status": "no_metric", "metric": None}
    for row in (
        round_view_row(round_view(**failed), "r", 2.0),
        round_row(recorded_round(**failed)),
    ):
        assert row["status"] == "no metric"
    jargon = "supported non-adoption: the run ended no_metric"
    for row in (
        round_view_row(round_view(reason=jargon), "run-a", 2.0),
        round_row(recorded_round(reason=jargon)),
    ):
        assert row["decision"] == "kept the incumbent: the run ended no metric"
        assert not [word for word in JARGON if word in json.dumps(row)]


def test_a_run_state_says_each_decision_once(api, finished: ResearchRun) -> None:
    status, state = api("runs", finished.run.id)
    assert status == 200 and state["rounds"]
    for row in state["rounds"]:
        assert said_once(row["decision"], row["disposition"]), row["decision"]
    # Every word the extension composes; the log tail is the ledger's lines verbatim (as
    # `zeroshot watch` prints them: a researcher's output there names its approach).
    composed = {key: value for key, value in state.items() if key != "log_tail"}
    assert not [word for word in JARGON if word in json.dumps(composed)]
    for row in state["rounds"]:
        status, detail = api("studies", "rosenbrock", "candidates", row["candidate_id"])
        assert status == 200
        assert not [word for word in JARGON if word in json.dumps(detail)]
        assert detail["decision"].count(": kept the incumbent") == 0


def test_a_post_with_the_login_cookie_but_no_xsrf_token_is_refused(
    api, jp_fetch: Fetch, jp_asyncio_loop: asyncio.AbstractEventLoop, finished: ResearchRun
) -> None:
    """A browser's login cookie alone authenticates a GET, never a POST: Stop and Continue
    also need Jupyter's XSRF token (the ``_xsrf`` cookie echoed in ``X-XSRFToken``), so a
    page on another site cannot stop a run with the user's cookie."""
    asyncio.set_event_loop(jp_asyncio_loop)
    logged_in = jp_asyncio_loop.run_until_complete(jp_fetch(*API, "studies"))
    cookies = [
        value.split(";", 1)[0]
        for value in logged_in.headers.get_list("Set-Cookie")
        if value.startswith("username-")
    ]
    assert cookies, "the token login set no login cookie"
    cookie = {"Authorization": "", "Cookie": cookies[0]}
    status, body = api("runs", headers=cookie)
    assert status == 200 and body["runs"], "the login cookie alone should read"
    stop, resume = ("runs", finished.run.id, "stop"), ("runs", finished.run.id, "continue")
    for parts in (stop, resume):
        status, body = api(*parts, method="POST", headers=cookie)
        assert status == 403 and "xsrf" in body["error"].lower(), (parts, status, body)
    xsrf = "0123456789abcdef0123456789abcdef"
    with_token = {**cookie, "Cookie": f"{cookies[0]}; _xsrf={xsrf}", "X-XSRFToken": xsrf}
    status, body = api(*stop, method="POST", headers=with_token)
    assert status == 200 and body["message"] == "the run had already finished"


def test_the_runs_table_has_each_candidates_tokens_from_the_ledger(
    api, module_root: ResearchRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose harness reports usage (the openai harness against a loopback server
    answering 11 + 7 tokens a call): the candidate its round made and decided carries the
    tokens the ledger recorded for that round; no cost was reported, so none is shown."""
    from auto_research_support import ResearchModel
    from chat_server import chat_server

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZEROSHOT_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZEROSHOT_HTTP_BACKOFF_S", "0.01")
    workspace = module_root.workspace / "usage"
    (workspace / ".zeroshot").mkdir(parents=True)
    client = Client(workspace=str(workspace))
    with chat_server({"respond": ResearchModel()}) as server:
        options = TemplateOptions(
            task="branin",
            harness="openai",
            base_url=server.base_url,
            model="standin",
            iterations=1,
            max_tokens=1500,
        )
        expansion = expand_template("auto-research", options)
        run = client.submit(expansion.graph, input=expansion.input, runtime=expansion.runtime)
        run.wait(timeout=TIMEOUT_S)
    try:
        assert run.terminal is not None and run.terminal.status == "succeeded", run.terminal
        nodes: dict[str, str] = {}
        tokens = 0
        for _, event in run.events():
            if isinstance(event, NodeStarted):
                nodes[event.reference.execution] = event.reference.node
            elif isinstance(event, NodeCompleted):
                if nodes.get(event.completion.reference.execution) == "adopt":
                    break  # round 1 is decided
                if event.usage is not None:
                    tokens += (event.usage.input_tokens or 0) + (event.usage.output_tokens or 0)
        assert tokens > 0 and tokens % 18 == 0, "the loopback server's usage was not recorded"

        status, board = api("studies", "branin", params={"workspace": str(workspace)})
        assert status == 200, board
        (decided,) = board["rounds"]
        by_id = {c["candidate_id"]: c for c in board["candidates"]}
        made = by_id[decided["candidate_id"]]
        assert made["round"] == 1 and made["tokens"] == tokens
        assert made["cost_usd"] is None  # the server reported no cost
        baseline = [c for c in board["candidates"] if c["round"] == 0]
        assert baseline and all(c["tokens"] is None for c in baseline)  # no model call made it
    finally:
        client.close()
