"""Test support for the research tests: rounds run in this process (the graph's order, no
engine: :func:`zeroshot_kernel.auto_research.inline.run_rounds`) and small task folders."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import PROJECT_ROOT

from zeroshot_kernel.auto_research.adoption import AdoptionRequest, adopt
from zeroshot_kernel.auto_research.inline import run_rounds
from zeroshot_kernel.auto_research.measure import MeasureRequest, measure
from zeroshot_kernel.auto_research.protocol import (
    Change,
    Evidence,
    ResearchResult,
    ReviewVerdict,
    ScoutProposal,
    VerdictLabel,
)
from zeroshot_kernel.auto_research.seeds import study_seed

TEMPLATES = PROJECT_ROOT / "research_templates"
BUNDLED = ("svc-digits", "rosenbrock", "branin")
STUDY = "study"
"""The study the driven rounds record into."""


@dataclass
class Run:
    results: list[ResearchResult] = field(default_factory=list)
    """The decided rounds (trusted adoption's results)."""
    verdicts: list[ReviewVerdict] = field(default_factory=list)
    """Each round's closing verdict."""
    passes: list[Evidence] = field(default_factory=list)
    """The measure step's evidence of every pass, corrections passes included."""


def drive(task: Path, workspace: Path, rounds: int, *, seed: int = 0) -> Run:
    """Run ``rounds`` rounds (fewer on an approved stop) and return what was decided."""
    run = Run()
    for done in run_rounds(task, workspace, STUDY, rounds, seed=seed):
        run.results.append(done.result)
        run.verdicts.append(done.verdict)
        run.passes.extend(evidence for _, evidence, _ in done.passes)
    return run


def measure_pass(
    task: Path,
    workspace: Path,
    round_number: int,
    change: Change | dict[str, Any],
    *,
    pass_number: int = 1,
    run_id: str = "test",
) -> Evidence:
    """One pass of the trusted measure step on ``change`` (a model or its wire form)."""
    wire = change.to_wire() if isinstance(change, Change) else change
    return measure(
        MeasureRequest(
            task=str(task),
            study=STUDY,
            workspace=str(workspace),
            run_id=run_id,
            round=round_number,
            pass_number=pass_number,
            pass_id=f"{run_id}/round-{round_number}/pass-{pass_number}",
            seed=study_seed(STUDY),
            change=wire,
        )
    )


def decide(
    task: Path,
    workspace: Path,
    evidence: Evidence,
    verdict: VerdictLabel = "accepted",
    adopt_it: bool = True,
) -> ResearchResult:
    """Trusted adoption of ``evidence``'s round after a review saying ``verdict``."""
    return adopt(
        AdoptionRequest(
            task=str(task),
            study=STUDY,
            workspace=str(workspace),
            round=evidence.round,
            evidence=evidence.to_wire(),
            verdict=verdict,
            adopt=adopt_it,
        )
    )


def change(params: dict[str, Any], parent: str = "c000", **fields: Any) -> Change:
    """A hand-made parameter change, for steering a test."""
    return Change.model_validate(
        {
            "parent_id": parent,
            "strategy": "exploration",
            "approach": "exploration:manual",
            "rationale": "test",
            "params": params,
            **fields,
        }
    )


def propose(params: dict[str, float], approach: str = "exploration:manual") -> ScoutProposal:
    """A hand-made proposal, for steering the researcher in a test."""
    strategy = approach.split(":")[0]
    return ScoutProposal.model_validate(
        {"strategy": strategy, "approach": approach, "params": params, "rationale": "test"}
    )


LINE_OBJECTIVE = textwrap.dedent('''
    """f(x) = x plus seeded noise; x > 1.5 hangs (with a child), x < 0.1 crashes."""
    import json, os, random, subprocess, sys, time

    x = json.load(open("params.json"))["x"]
    if x > 1.5:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        pid_file = os.environ.get("PID_FILE")
        if pid_file:
            with open(pid_file + ".tmp", "w") as handle:  # renamed when whole
                handle.write(f"{os.getpid()} {child.pid}")
            os.replace(pid_file + ".tmp", pid_file)
        print("hanging", flush=True)
        time.sleep(120)
    if x < 0.1:
        raise SystemExit("x too small: the experiment crashed")
    # Shared noise cancels on paired seeds; NOISE=independent draws it per seed and x.
    key = os.environ["ZEROSHOT_SEED"] + (repr(x) if os.environ.get("NOISE") == "independent"
                                         else "")
    noise = random.Random(key).gauss(0.0, 0.1)
    print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": x + noise}))
''')


def line_task(
    root: Path,
    *,
    budget: float = 2.0,
    target: float | None = None,
    env: dict[str, str] | None = None,
    warm: bool = False,
) -> Path:
    """A one-parameter task whose metric is x plus noise (sigma 0.1), minimised; ``warm``
    runs it from a warm interpreter (``preload``)."""
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "objective.py").write_text(LINE_OBJECTIVE)
    (root / "candidate" / "params.json").write_text(json.dumps({"x": 1.0}))
    spec = {
        "name": "line",
        "charter": "Lower x.",
        "metric": "line",
        "direction": "minimize",
        "command": ["{python}", "objective.py"],
        "budgetSeconds": budget,
        "repeats": 3,
        "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 2.0}],
        "env": env or {},
    }
    if target is not None:
        spec["target"] = target
    if warm:
        spec["preload"] = ["json", "random"]
    (root / "task.yaml").write_text(json.dumps(spec))  # JSON is YAML
    return root
