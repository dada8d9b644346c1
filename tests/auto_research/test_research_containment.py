"""Research experiments run model-written code in a box (``containment.md``); the metric
comes from a scorer the candidate never sees.

Hostile candidates run through the public interfaces (``zeroshot research run`` in a
subprocess, the template through the Client API, ``run_repeats``) with real bubblewrap
and real processes. Each test asserts from what the attack leaves: the bytes of the files
it tried to write, what it could see (written to its outputs and echoed by the test's own
scorer), a loopback listener's connections, the host's process table, the recorded
measurements. An uncontained run (``--sandbox none``) of the same candidate is the
control: there the network attack connects and the daemon outlives its experiment.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import runpy
import select
import shutil
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from auto_research_support import (
    SCRIPTED_SCOUTS,
    TEMPLATES,
    new_workspace,
    script_points,
    start,
)
from chat_server import chat_server
from code_task_agents import competent, research
from conftest import require
from support import processes_named, wait_until, zeroshot
from zeroshot_widgets.evidence_table import incumbent_card_html
from zeroshot_widgets.study_views import header_html

from zeroshot_kernel.auto_research import ResearchRecords, load_task, run_repeats
from zeroshot_kernel.auto_research.candidate_detail import candidate_detail
from zeroshot_kernel.auto_research.studies.table import study_rows
from zeroshot_kernel.auto_research.views import (
    SELF_SCORED_NOTE,
    UNCONTAINED_NOTE,
    load_research_view,
)
from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.outcome import ErrorOutcome
from zeroshot_kernel.ledger.events import SucceededResult
from zeroshot_kernel.sandbox import Containment, problem

# slow: real research runs of hostile candidates in boxes
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    require(problem() is None, f"bubblewrap cannot make a box here: {problem()}")


RUN_TIMEOUT_S = 300
NO_BOX = {"ZEROSHOT_BWRAP": "/nonexistent"}
"""Simulates a machine without bubblewrap."""
SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-" + uuid.uuid4().hex,
    "GH_TOKEN": "ghp_" + uuid.uuid4().hex,
}
MARK = b"zeroshot-" + b"escaped-" + b"box"
"""What the probe writes wherever it can; joined at run time, so these bytes are in no file
unless an attack wrote them."""

PROBE = '''"""A hostile candidate: it tries every way out of its box and writes what it saw."""
import atexit, json, os, socket, subprocess, sys

ATTACKS = os.environ.get("ATTACKS", "").split(",")
MARK = "zeroshot-" + "escaped-" + "box"
DAEMON = (
    "import os, sys, time; open('/proc/self/comm', 'w').write(sys.argv[1]); "
    "os.write(int(sys.argv[3]), b'1'); time.sleep(2); open(sys.argv[2], 'w').write('alive'); "
    "time.sleep(60)"
)
atexit.register(lambda: print('ZEROSHOT_METRIC {"name": "probe", "value": -15}'))


def attempt(action):
    try:
        return action()
    except Exception as failure:
        return type(failure).__name__


def write(path):
    with open(path, "ab") as handle:
        handle.write(MARK.encode())
    return "written"


def connect():
    socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5).close()
    return "connected"


def secrets_in_proc():
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        found.update(n for n in ("AWS_SECRET_ACCESS_KEY", "GH_TOKEN") if n.encode() in data)
    return sorted(found)


def daemon():
    ready, done = os.pipe()
    argv = [sys.executable, "-c", DAEMON, os.environ["DAEMON"], os.environ["MARKER"], str(done)]
    subprocess.Popen(argv, start_new_session=True, pass_fds=(done,))
    os.close(done)
    return "started" if os.read(ready, 1) == b"1" else "not started"


seen = {"value": json.load(open("params.json"))["x"]}
if "env" in ATTACKS:
    seen["env"] = {k: v for k, v in os.environ.items() if k != "TARGETS"}
    seen["proc"] = secrets_in_proc()
if "write" in ATTACKS:
    seen["read planted"] = attempt(lambda: open(os.environ["PLANTED"]).read())
    for path in json.loads(os.environ["TARGETS"]):
        seen["write " + os.path.basename(path)] = attempt(lambda: write(path))
if "net" in ATTACKS:
    seen["net"] = attempt(connect)
if "daemon" in ATTACKS:
    seen["daemon"] = attempt(daemon)
if os.environ.get("ZEROSHOT_OUTPUT_DIR"):
    with open(os.path.join(os.environ["ZEROSHOT_OUTPUT_DIR"], "seen.json"), "w") as handle:
        json.dump(seen, handle)
'''

PROBE_SCORER = '''"""The test's scorer: echoes what the probe saw; the metric is its parameter x."""
import json, os

handle = os.open(
    os.path.join(os.environ["ZEROSHOT_OUTPUT_DIR"], "seen.json"), os.O_RDONLY | os.O_NOFOLLOW
)
seen = json.loads(os.read(handle, 1 << 16))
print("SEEN " + json.dumps(seen, sort_keys=True))
print("ZEROSHOT_METRIC " + json.dumps({"name": "probe", "value": float(seen["value"])}))
'''


def probe_task(
    workspace: Path,
    name: str,
    env: dict[str, str],
    *,
    scored: bool = True,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A code task (``probe.py`` editable) with one parameter ``x`` (so the embedded
    agents can run it), measured by the test's scorer unless ``scored`` is False (then
    it declares itself self-scored)."""
    root = workspace / name
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "probe.py").write_text(PROBE)
    (root / "candidate" / "params.json").write_text(json.dumps({"x": 0.5}))
    spec: dict[str, Any] = {
        "name": name,
        "charter": "Probe the box.",
        "metric": "probe",
        "direction": "minimize",
        "command": ["{python}", "probe.py"],
        "budgetSeconds": 30,
        "repeats": 2,
        "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}],
        "editable": ["probe.py"],
        "env": env,
        **(extra or {}),
    }
    if scored:
        (root / "scorer").mkdir()
        (root / "scorer" / "score.py").write_text(PROBE_SCORER)
        spec["score"] = ["{python}", "score.py"]
    else:
        spec["selfScored"] = True
    (root / "task.yaml").write_text(json.dumps(spec))  # JSON is YAML
    return root


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def measurements(workspace: Path, study: str) -> list[Any]:
    records = ResearchRecords(workspace, study)
    return [
        m.experiment for manifest in records.candidates().values() for m in manifest.measurements
    ]


def seen_by_probe(workspace: Path, study: str) -> list[dict[str, Any]]:
    """What every measured probe saw, as the test's scorer echoed it into the records."""
    found = []
    for run in measurements(workspace, study):
        match = re.search(r"^SEEN (.*)$", run.output_tail, re.MULTILINE)
        assert match is not None, run.output_tail  # the channel works, or the test says so
        found.append(json.loads(match.group(1)))
    return found


@dataclass
class Escape:
    """One research run of the probe, and what it left."""

    workspace: Path
    task: Path
    ran: subprocess.CompletedProcess[str]
    hashes: dict[Path, tuple[str, str]]
    """File -> (sha256 before the run, after it)."""
    pending_connections: bool
    survivors: list[int]
    marker: Path
    seen: list[dict[str, Any]]


def escape_run(root: Path, attacks: str, *options: str, env: dict[str, str]) -> Iterator[Escape]:
    """Run the probe task for one round (the embedded agents change ``x``) with secrets in
    the controller's environment and a loopback listener waiting for the probe."""
    workspace = new_workspace(root / "ws")
    listener = socket.create_server(("127.0.0.1", 0))
    daemon = "zsd" + uuid.uuid4().hex[:10]
    marker = workspace / "daemon-was-here"
    planted = workspace / ".zeroshot" / "planted.txt"
    planted.write_text("the user's own file\n")
    records = workspace / ".zeroshot" / "research" / "probe"
    targets = [
        planted,
        workspace / ".zeroshot" / "ledger.db",
        records / "incumbent.json",
        records / "candidates" / "c000" / "manifest.json",
        workspace / "outside.txt",
        workspace / "probe" / "task.yaml",
        workspace / "probe" / "scorer" / "score.py",
    ]
    task = probe_task(
        workspace,
        "probe",
        {
            "ATTACKS": attacks,
            "TARGETS": json.dumps([str(t) for t in targets]),
            "PLANTED": str(planted),
            "PORT": str(listener.getsockname()[1]),
            "DAEMON": daemon,
            "MARKER": str(marker),
            "CANARY": "visible",
        },
    )
    kept = [
        planted,
        task / "task.yaml",
        task / "scorer" / "score.py",
        task / "candidate" / "probe.py",
    ]
    before = {path: sha256(path) for path in kept}
    try:
        ran = zeroshot(
            workspace,
            "research",
            "run",
            "probe",
            "--iterations",
            "1",
            *options,
            **SECRETS,
            **env,
        )
        survivors = processes_named(daemon)  # at once: a surviving daemon lives 62 s
        pending = bool(select.select([listener], [], [], 0)[0])
        yield Escape(
            workspace=workspace,
            task=task,
            ran=ran,
            hashes={path: (before[path], sha256(path)) for path in kept},
            pending_connections=pending,
            survivors=survivors,
            marker=marker,
            seen=seen_by_probe(workspace, "probe") if ran.returncode == 0 else [],
        )
    finally:
        listener.close()
        for pid in processes_named(daemon):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def boxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Escape]:
    yield from escape_run(tmp_path_factory.mktemp("boxed"), "env,write,net,daemon", env={})


@pytest.fixture(scope="module")
def unboxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Escape]:
    """The control: the same probe (no writes: they would succeed) with ``--sandbox none``
    on a machine without bubblewrap."""
    yield from escape_run(
        tmp_path_factory.mktemp("unboxed"), "env,net,daemon", "--sandbox", "none", env=NO_BOX
    )


def test_the_boxed_run_measures_every_probe_and_goes_on(boxed: Escape) -> None:
    assert boxed.ran.returncode == 0, boxed.ran.stdout + boxed.ran.stderr
    runs = measurements(boxed.workspace, "probe")
    assert len(runs) >= 3 and all(r.status == "ok" and r.contained for r in runs)
    assert all(r.limits["processes"].endswith("(cgroup)") for r in runs)
    # The probe's atexit hook printed -15 every time; the scorer's value (x) counted.
    assert all('"value": -15}' in r.output_tail for r in runs)
    assert all(r.metric is not None and 0.0 <= r.metric <= 1.0 for r in runs)
    assert UNCONTAINED_NOTE not in boxed.ran.stdout


def test_a_boxed_candidate_cannot_write_records_ledger_task_or_outside(boxed: Escape) -> None:
    assert boxed.ran.returncode == 0, boxed.ran.stderr
    assert all(before == after for before, after in boxed.hashes.values()), boxed.hashes
    assert not (boxed.workspace / "outside.txt").exists()
    assert files_holding(boxed.workspace, MARK) == []
    assert files_holding(boxed.task, MARK) == []
    assert Client(workspace=str(boxed.workspace)).runs()  # the ledger still reads
    # Hidden, not merely read-only: the user's file was not there to read.
    assert all(s["read planted"] != "the user's own file\n" for s in boxed.seen)


def test_a_boxed_candidate_sees_none_of_the_controllers_secrets(boxed: Escape) -> None:
    assert boxed.seen
    for seen in boxed.seen:
        assert seen["env"]["CANARY"] == "visible"  # the task's env reaches it
        assert not set(SECRETS) & set(seen["env"]) and seen["proc"] == []
        assert not any(secret in json.dumps(seen) for secret in SECRETS.values())
    for secret in SECRETS.values():
        assert files_holding(boxed.workspace, secret.encode()) == []


def test_a_boxed_candidate_reaches_no_network(boxed: Escape) -> None:
    assert boxed.seen and all(s["net"] != "connected" for s in boxed.seen)
    assert not boxed.pending_connections


def test_a_boxed_candidates_daemon_dies_with_its_box(boxed: Escape) -> None:
    assert boxed.seen and all(s["daemon"] == "started" for s in boxed.seen)
    assert boxed.survivors == []
    assert not boxed.marker.exists()


def test_sandbox_none_runs_uncontained_says_so_and_the_attacks_land(unboxed: Escape) -> None:
    """The control: without a box the same probe connects and leaves a daemon behind; the
    records and every view say UNCONTAINED. The environment is still an allow-list."""
    assert unboxed.ran.returncode == 0, unboxed.ran.stdout + unboxed.ran.stderr
    runs = measurements(unboxed.workspace, "probe")
    assert runs and all(r.status == "ok" and not r.contained and r.limits == {} for r in runs)
    assert unboxed.pending_connections and all(s["net"] == "connected" for s in unboxed.seen)
    assert unboxed.survivors
    wait_until(unboxed.marker.exists, 30, "the uncontained daemon's marker")
    for seen in unboxed.seen:
        assert seen["env"]["CANARY"] == "visible" and not set(SECRETS) & set(seen["env"])
    assert UNCONTAINED_NOTE in unboxed.ran.stdout
    client = Client(workspace=str(unboxed.workspace))
    [run] = client.runs()
    shown = zeroshot(unboxed.workspace, "research", "show", run.run_id)
    assert UNCONTAINED_NOTE in shown.stdout
    view = load_research_view(client.ledger, run.run_id)
    assert view.uncontained and UNCONTAINED_NOTE in incumbent_card_html(view)
    [row] = [r for r in study_rows(client) if r.name == "probe"]
    assert all("UNCONTAINED" in r.status_label for r in row.runs)
    detail = candidate_detail(unboxed.workspace, "probe", "c000")
    assert detail.uncontained and "UNCONTAINED" in header_html(detail)


def test_a_code_task_without_a_box_is_refused_in_one_line(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    probe_task(workspace, "probe", {})
    ran = zeroshot(workspace, "research", "run", "probe", "--iterations", "1", **NO_BOX)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    [line] = ran.stderr.splitlines()
    assert line.startswith("error: no sandbox: bubblewrap (bwrap) is not installed; install")
    assert "--sandbox none" in line
    assert Client(workspace=str(workspace)).runs() == []
    assert not (workspace / ".zeroshot" / "research").exists()


def test_a_code_task_submitted_past_the_cli_is_refused_at_its_measure_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template submitted through the Client API (no CLI check): the trusted measure
    step refuses the code task in one line before it records or runs anything."""
    from zeroshot_kernel.ledger.failure import explain_failure

    monkeypatch.setenv("ZEROSHOT_BWRAP", NO_BOX["ZEROSHOT_BWRAP"])
    workspace = new_workspace(tmp_path / "ws")
    probe_task(workspace, "probe", {})
    research = start(workspace, "probe", 1)
    assert research.wait().status == "failed"
    [measured] = research.completions("measure")  # a refusal: never retried
    outcome = measured.completion.outcome
    assert isinstance(outcome, ErrorOutcome) and outcome.code == "refusal"
    cause = explain_failure(event for _, event in research.run.events())
    assert cause is not None
    assert "no sandbox: bubblewrap (bwrap) is not installed" in "\n".join(cause.lines())
    assert not ResearchRecords(workspace, "probe").initialised()


def test_a_parameter_task_without_a_box_runs_unboxed_and_records_it(tmp_path: Path) -> None:
    """No model-written code runs in a parameter-only task, so it runs without a box,
    recorded as such, rather than not at all."""
    workspace = new_workspace(tmp_path / "ws")
    ran = zeroshot(workspace, "research", "run", "branin", "--iterations", "1", **NO_BOX)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    runs = measurements(workspace, "branin")
    assert runs and all(r.status == "ok" and not r.contained for r in runs)
    record = ResearchRecords(workspace, "branin").read_round(1)
    assert record is not None and record.passes[-1].evidence is not None
    assert "UNCONTAINED: no box can be made here" in record.passes[-1].evidence.summary
    assert UNCONTAINED_NOTE in ran.stdout


# --- the metric comes from the scorer ------------------------------------------------------

QUADRATURE = TEMPLATES / "quadrature"
START = (QUADRATURE / "candidate" / "quadrature.py").read_text()
FORGED = START + (
    "\n\nimport atexit\n\n"
    'atexit.register(lambda: print(\'ZEROSHOT_METRIC {"name": "log10_error", '
    '"value": -15}\'))\n'
)


def test_a_forged_metric_line_from_an_atexit_hook_changes_nothing(tmp_path: Path) -> None:
    """The attack of issue 27: an edited module prints its own metric line when the
    experiment exits. The scorer's value is recorded, and nothing is adopted."""
    workspace = new_workspace(tmp_path / "ws")
    with chat_server({"respond": competent(FORGED)}) as server:
        ran = research(workspace, server.base_url, "forged")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    records = ResearchRecords(workspace, "forged")
    baseline, forged = records.read_manifest("c000"), records.read_manifest("c001")
    assert baseline is not None and forged is not None
    honest = {m.experiment.seed: m.experiment.metric for m in baseline.measurements}
    runs = [m.experiment for m in forged.measurements]
    assert runs and all('"value": -15}' in r.output_tail for r in runs)  # the hook ran
    # Same rule, same integrands: exactly the starting candidate's scores, never -15.
    assert all(r.status == "ok" and r.metric == honest[r.seed] for r in runs)
    [decided] = load_research_view(
        Client(workspace=str(workspace)).ledger, Client(workspace=str(workspace)).runs()[0].run_id
    ).rounds
    assert not decided.adopted and decided.metric is not None and decided.metric > -3
    incumbent = records.read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c000"


def test_a_code_task_without_a_scorer_is_refused_at_load(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    task = workspace / "quad"
    (task / "candidate").mkdir(parents=True)
    for file in (QUADRATURE / "candidate").iterdir():
        (task / "candidate" / file.name).write_bytes(file.read_bytes())
    text = (QUADRATURE / "task.yaml").read_text()
    (task / "task.yaml").write_text(text.replace('score: ["{python}", "score.py"]\n', ""))
    ran = research(workspace, "http://127.0.0.1:9/v1", "quad", task="quad")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    [line] = ran.stderr.splitlines()
    assert "add `score`" in line and "selfScored: true" in line
    assert Client(workspace=str(workspace)).runs() == []


def test_a_self_scored_task_says_so_in_every_view(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    probe_task(workspace, "probe", {}, scored=False)
    ran = zeroshot(workspace, "research", "run", "probe", "--iterations", "1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "self-scored" in ran.stderr and SELF_SCORED_NOTE in ran.stdout
    runs = measurements(workspace, "probe")
    assert runs and all(r.metric == -15 and r.contained for r in runs)  # its own line counts
    client = Client(workspace=str(workspace))
    [run] = client.runs()
    assert SELF_SCORED_NOTE in zeroshot(workspace, "research", "show", run.run_id).stdout
    view = load_research_view(client.ledger, run.run_id)
    assert view.self_scored and SELF_SCORED_NOTE in incumbent_card_html(view)
    [row] = [r for r in study_rows(client) if r.name == "probe"]
    assert row.task_label == "probe (self-scored)"
    detail = candidate_detail(workspace, "probe", "c000")
    assert detail.self_scored and "self-scored" in header_html(detail)
    listed = zeroshot(workspace, "research", "tasks")
    assert re.search(r"^quadrature .*, scored by scorer/$", listed.stdout, re.MULTILINE)


@pytest.mark.parametrize(
    ("writer", "reason"),
    [
        pytest.param(
            "open(OUT, 'w').write(' ' * 70_000 + json.dumps(GOOD))",
            "is larger than 65536 bytes",
            id="oversized",
        ),
        pytest.param(
            "open(OUT, 'w').write(json.dumps(dict(GOOD, weights=[float('nan')] * 64)))",
            "holds NaN",
            id="nan",
        ),
        pytest.param(
            "open(OUT, 'w').write(json.dumps(dict(GOOD, weights=[0.1] * 10)))",
            "needs as many weights as nodes",
            id="wrong-count",
        ),
        pytest.param(
            "open(OUT, 'w').write(json.dumps({'nodes': [0.5] * 65, 'weights': [0.01] * 65}))",
            "needs 1 to 64 nodes, not 65",
            id="over-budget",
        ),
        pytest.param(
            "open(OUT, 'w').write(json.dumps(dict(GOOD, nodes=[1.5] * 64)))",
            "a node is outside [0, 1]",
            id="outside",
        ),
        pytest.param("open(OUT, 'w').write(json.dumps(GOOD)[:40])", "is not JSON", id="truncated"),
        pytest.param("open(OUT, 'w').write('[' * 60_000)", "is not JSON", id="nested"),
        pytest.param("open(OUT, 'w').write('not json')", "is not JSON", id="not-json"),
        pytest.param("pass", "cannot open rule.json", id="missing"),
        pytest.param("os.symlink('/etc/hostname', OUT)", "not a regular file or folder", id="link"),
        pytest.param("os.mkfifo(OUT)", "not a regular file or folder", id="fifo"),
    ],
)
def test_hostile_outputs_get_no_metric(tmp_path: Path, writer: str, reason: str) -> None:
    """The candidate's outputs are data the scorer reads within limits: anything but the
    rule it expects is no metric, never an error of the measurement."""
    task = load_task(QUADRATURE)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "run.py").write_text(
        "import json, os\n"
        "OUT = os.path.join(os.environ['ZEROSHOT_OUTPUT_DIR'], 'rule.json')\n"
        "GOOD = {'nodes': [i / 64 for i in range(64)], 'weights': [1 / 64] * 64}\n"
        f"{writer}\n"
    )
    [run] = run_repeats(task, candidate, [1])
    assert run.status == "no_metric" and run.metric is None, run.output_tail
    assert reason in run.output_tail.strip().splitlines()[-1] and run.contained


def test_well_formed_outputs_are_scored(tmp_path: Path) -> None:
    """The control for the hostile outputs: the starting rule scores."""
    task = load_task(QUADRATURE)
    [run] = run_repeats(task, task.candidate_dir, [1])
    assert run.status == "ok" and run.metric is not None and -2.5 < run.metric < -1.0


FITTED = """\
import math, os, random

import numpy as np


def integrands(rng):
    for _ in range(12):  # the family and draw the charter describes, from ZEROSHOT_SEED
        a = rng.uniform(-1.0, 0.5)
        b = a + rng.uniform(1.0, 3.0)
        p = [rng.uniform(-1.0, 1.0) for _ in range(4)]
        q = [rng.uniform(-1.0, 1.0) for _ in range(4)]
        k = rng.choice((-1.0, 1.0)) * rng.uniform(0.5, 1.5)
        w = rng.uniform(1.0, 8.0)
        phi = rng.uniform(0.0, 2.0 * math.pi)
        yield a, b, p, q, k, w, phi


def rule(budget):
    from closed_form import exact, estimate  # a copy of the scorer's arithmetic

    nodes = [(i + 0.5) / budget for i in range(budget)]
    basis = np.eye(budget)
    rows, truths = [], []
    for integrand in integrands(random.Random(SEED)):
        rows.append([estimate(nodes, list(unit), *integrand) for unit in basis])
        truths.append(exact(*integrand))
    weights, *_ = np.linalg.lstsq(np.array(rows), np.array(truths), rcond=None)
    return nodes, [float(v) for v in weights]
"""


def test_a_rule_fitted_to_what_the_candidate_can_know_gains_nothing(tmp_path: Path) -> None:
    """The integrands come from ZEROSHOT_SEED and a key only the scorer holds: a rule
    fitted exactly to the integrands the seed alone would draw (with the scorer's own
    closed form, which a model could write) scores as a generic rule does, while the same
    fit with the key reaches the floor: the key is what keeps the metric honest."""
    task = load_task(QUADRATURE)
    scorer = QUADRATURE / "scorer" / "score.py"
    key = runpy.run_path(str(scorer))["KEY"]
    metrics = {}
    for name, seed in {"seed": "int(os.environ['ZEROSHOT_SEED'])", "key": None}.items():
        candidate = tmp_path / name
        shutil.copytree(task.candidate_dir, candidate)
        drawn = seed or f"f'{key}:{{int(os.environ[\"ZEROSHOT_SEED\"])}}'"
        (candidate / "quadrature.py").write_text(FITTED.replace("SEED", drawn))
        shutil.copy(scorer, candidate / "closed_form.py")  # the box hides the scorer itself
        [run] = run_repeats(task, candidate, [7])
        assert run.status == "ok" and run.metric is not None and run.contained, run.output_tail
        metrics[name] = run.metric
    assert metrics["key"] < -12.0, metrics  # the fit works where the integrands are known
    assert metrics["seed"] > -8.0, metrics  # and is a middling rule where they are not


# --- in the experiment runner itself ---------------------------------------------------------

ENV_PROBE = (
    "import json, os\n"
    "print('ENV ' + json.dumps(dict(os.environ)))\n"
    "print('ZEROSHOT_METRIC ' + json.dumps({'name': 'env', 'value': 1.0}))\n"
)


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_an_experiment_sees_an_allow_list_not_this_processs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "task"
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "env.py").write_text(ENV_PROBE)
    (root / "candidate" / "params.json").write_text(json.dumps({"x": 1.0}))
    spec = {
        "name": "env",
        "charter": "Print the environment.",
        "metric": "env",
        "direction": "minimize",
        "command": ["{python}", "env.py"],
        "budgetSeconds": 30,
        "repeats": 2,
        "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 2.0}],
        "env": {"CANARY": "visible"},
    }
    (root / "task.yaml").write_text(json.dumps(spec))
    task = load_task(root)
    [run] = run_repeats(task, task.candidate_dir, [3], containment=Containment(mode))
    assert run.status == "ok" and run.contained == (mode == "bwrap")
    match = re.search(r"^ENV (.*)$", run.output_tail, re.MULTILINE)
    assert match is not None, run.output_tail
    seen = json.loads(match.group(1))
    assert seen["CANARY"] == "visible" and seen["ZEROSHOT_SEED"] == "3"
    assert not set(SECRETS) & set(seen)
    assert not any(secret in run.output_tail for secret in SECRETS.values())


WARM_DAEMON = (
    "import os, subprocess, sys\n"
    "ready, done = os.pipe()\n"
    "code = (\"import os, sys, time; open('/proc/self/comm', 'w').write(sys.argv[1]); \"\n"
    "        \"os.write(int(sys.argv[2]), b'1'); time.sleep(60)\")\n"
    "subprocess.Popen([sys.executable, '-c', code, os.environ['DAEMON'], str(done)],\n"
    "                 start_new_session=True, pass_fds=(done,))\n"
    "os.close(done)\n"
    "assert os.read(ready, 1) == b'1'\n"
    'print(\'ZEROSHOT_METRIC {"name": "warm", "value": 1.0}\')\n'
)


def test_a_warm_interpreters_box_ends_with_the_candidates_measurement(tmp_path: Path) -> None:
    """A warm interpreter in a box serves one candidate: when its repeats are done, its
    box goes, and with it every process the candidate left."""
    daemon = "zsw" + uuid.uuid4().hex[:10]
    root = tmp_path / "task"
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "warm.py").write_text(WARM_DAEMON)
    (root / "candidate" / "params.json").write_text(json.dumps({"x": 1.0}))
    spec = {
        "name": "warm",
        "charter": "Leave a daemon.",
        "metric": "warm",
        "direction": "minimize",
        "command": ["{python}", "warm.py"],
        "budgetSeconds": 30,
        "repeats": 2,
        "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 2.0}],
        "env": {"DAEMON": daemon},
        "preload": ["json"],
    }
    (root / "task.yaml").write_text(json.dumps(spec))
    task = load_task(root)
    try:
        runs = run_repeats(task, task.candidate_dir, [1, 2], parallel=2)
        assert [r.status for r in runs] == ["ok", "ok"] and all(r.contained for r in runs)
        assert processes_named(daemon) == []
    finally:
        for pid in processes_named(daemon):
            os.kill(pid, signal.SIGKILL)


# --- limits ------------------------------------------------------------------------------------

BOMBS = '''"""mode 0: fine; 1: a memory bomb; 2: a fork bomb (its processes named after NAME)."""
import json, os, signal, sys

mode = json.load(open("params.json"))["mode"]
if mode == 1:
    hoard = []
    while True:
        hoard.append(b"x" * (32 << 20))
if mode == 2:
    open("/proc/self/comm", "w").write(os.environ["NAME"])
    while True:
        try:
            pid = os.fork()
        except OSError as failure:
            sys.exit(f"fork failed: {failure}")
        if pid == 0:
            signal.pause()
print('ZEROSHOT_METRIC {"name": "bombs", "value": 1.0}')
'''


def test_memory_and_fork_bombs_end_their_experiment_and_the_run_goes_on(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    name = "zsb" + uuid.uuid4().hex[:10]
    root = workspace / "bombs"
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "bombs.py").write_text(BOMBS)
    (root / "candidate" / "params.json").write_text(json.dumps({"mode": 0}))
    spec = {
        "name": "bombs",
        "charter": "Survive the bombs.",
        "metric": "bombs",
        "direction": "minimize",
        "command": ["{python}", "bombs.py"],
        "budgetSeconds": 60,
        "repeats": 2,
        "searchSpace": [{"name": "mode", "type": "int", "low": 0, "high": 2}],
        "env": {"NAME": name},
        "limits": {"memoryMb": 192, "processes": 24},
    }
    (root / "task.yaml").write_text(json.dumps(spec))
    script_points(workspace, [{"mode": 1}, {"mode": 2}])
    research = start(workspace, "bombs", 2, nodes=SCRIPTED_SCOUTS)
    try:
        terminal = research.wait()
        assert isinstance(terminal, SucceededResult), terminal  # the controller lived on
        records = research.records
        limits = {}
        for candidate, limit in (("c001", "memory"), ("c002", "processes")):
            manifest = records.read_manifest(candidate)
            assert manifest is not None and manifest.params["mode"] == int(candidate[-1])
            [run] = [m.experiment for m in manifest.measurements]
            assert run.status == "resource_limit" and run.metric is None
            assert f"resource limit: {limit} (" in run.output_tail
            assert run.duration_seconds < 60  # stopped by the limit, not the budget
            limits[limit] = run.limits[limit]
        assert limits == {"memory": f"{192 << 20} bytes (cgroup)", "processes": "24 (cgroup)"}
        rounds = research.view().rounds
        assert [r.experiment_status for r in rounds] == ["resource_limit"] * 2
        assert not any(r.adopted for r in rounds)
        assert processes_named(name) == []
    finally:
        for pid in processes_named(name):
            os.kill(pid, signal.SIGKILL)
