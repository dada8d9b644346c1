"""Test support for the notebook workbench tests: real auto-research runs, kept small.

Each run is a real one (embedded local agents, a detached controller, the rosenbrock
task, about 4 s a round). ``finished_run`` is made once per test process and shared by
every module that only reads a finished run.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from conftest import PROJECT_ROOT

from zeroshot_kernel.client import Client, Run
from zeroshot_kernel.templates import TemplateOptions, expand_template

TASK = "rosenbrock"
FAST_TASK = "tenms"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class ResearchRun:
    workspace: Path
    client: Client
    run: Run


def research_workspace(root: Path) -> Path:
    """A workspace holding a copy of the bundled rosenbrock task."""
    shutil.copytree(PROJECT_ROOT / "research_templates" / TASK, root / TASK)
    (root / ".zeroshot").mkdir(exist_ok=True)
    return root


def start_research(workspace: Path, iterations: int) -> ResearchRun:
    client = Client(workspace=str(workspace))
    expansion = expand_template("auto-research", TemplateOptions(task=TASK, iterations=iterations))
    run = client.submit(
        expansion.graph,
        input=expansion.input,
        runtime=expansion.runtime,
        title=f"auto-research {TASK}",
    )
    return ResearchRun(workspace, client, run)


@functools.cache
def finished_run() -> ResearchRun:
    """A two-round run, finished; one per test process (removed when the process ends)."""
    root = Path(tempfile.mkdtemp(prefix="zeroshot-workbench-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    workspace = research_workspace(root)
    started = start_research(workspace, iterations=2)
    started.run.wait(timeout=180)
    return started


def fast_task(workspace: Path) -> Path:
    """A task whose experiment takes about 10 ms (a round costs about 0.2 s), so a test
    can afford a real run of 100 rounds."""
    candidate = workspace / FAST_TASK / "candidate"
    candidate.mkdir(parents=True)
    (candidate / "objective.py").write_text(
        "import json, os, random, time\n"
        "time.sleep(0.01)\n"
        "p = json.load(open('params.json'))\n"
        "noise = random.Random(int(os.environ['ZEROSHOT_SEED'])).gauss(0.0, 0.01)\n"
        "value = (p['x'] - 1.0) ** 2 + (p['y'] + 0.5) ** 2 + noise\n"
        "print('ZEROSHOT_METRIC ' + json.dumps({'name': 'loss', 'value': value}))\n"
    )
    (candidate / "params.json").write_text(json.dumps({"x": -4.0, "y": 4.0}))
    spec = {
        "name": FAST_TASK,
        "charter": "Minimise a noisy quadratic quickly.",
        "metric": "loss",
        "direction": "minimize",
        "command": ["{python}", "objective.py"],
        "budgetSeconds": 10,
        "repeats": 3,
        "preload": ["json", "random"],
        "searchSpace": [
            {"name": "x", "type": "float", "low": -5.0, "high": 5.0},
            {"name": "y", "type": "float", "low": -5.0, "high": 5.0},
        ],
    }
    (workspace / FAST_TASK / "task.yaml").write_text(json.dumps(spec))  # JSON is YAML
    (workspace / ".zeroshot").mkdir(exist_ok=True)
    return workspace
