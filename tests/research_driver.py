"""Test support for the research tests: a tiny round driver and small task folders.

The driver stands in for the auto-research graph (three scouts, the researcher, a fresh
reviewer, corrections back to the researcher within the round); it is not product code.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from conftest import PROJECT_ROOT

from zeroshot_kernel.research import reconsideration_due
from zeroshot_kernel.research.agents import researcher, reviewer, scout
from zeroshot_kernel.research.protocol import (
    STRATEGIES,
    ResearcherInput,
    ResearchResult,
    ReviewerInput,
    ReviewVerdict,
    ScoutInput,
    ScoutProposal,
)

TEMPLATES = PROJECT_ROOT / "research_templates"
BUNDLED = ("svc-digits", "rosenbrock", "branin")
REVIEW_LIMIT = 64
STUDY = "study"
"""The study the driven rounds record into."""


@dataclass
class Run:
    results: list[ResearchResult] = field(default_factory=list)
    verdicts: list[ReviewVerdict] = field(default_factory=list)
    passes: list[ResearchResult] = field(default_factory=list)
    """Every researcher result, corrections passes included."""


def drive(task: Path, workspace: Path, rounds: int, *, seed: int = 0) -> Run:
    """Run ``rounds`` rounds (fewer on an approved stop) and return what was accepted."""
    run = Run()
    for number in range(1, rounds + 1):
        proposals = [scout(ScoutInput(study=STUDY,
                                      task=str(task), workspace=str(workspace), round=number,
                                      strategy=s, seed=seed)) for s in STRATEGIES]
        due = reconsideration_due([r.to_wire() for r in run.results], rounds)
        corrections = ""
        for _ in range(REVIEW_LIMIT):
            result = researcher(ResearcherInput(
                study=STUDY, task=str(task), workspace=str(workspace), round=number,
                proposals=proposals, corrections=corrections, reconsideration_due=due,
                seed=seed,
            ))
            run.passes.append(result)
            verdict = reviewer(ReviewerInput(study=STUDY, task=str(task), workspace=str(workspace),
                                             result=result))
            if verdict.verdict != "corrections":
                break
            corrections = verdict.corrections
        else:
            raise AssertionError(f"round {number}: review limit exhausted: {verdict.reason}")
        run.results.append(result)
        run.verdicts.append(verdict)
        if verdict.verdict == "stop_approved":
            break
    return run


def propose(params: dict[str, float], approach: str = "exploration:manual") -> ScoutProposal:
    """A hand-made proposal, for steering the researcher in a test."""
    strategy = approach.split(":")[0]
    return ScoutProposal.model_validate({"strategy": strategy, "approach": approach,
                                         "params": params, "rationale": "test"})


LINE_OBJECTIVE = textwrap.dedent('''
    """f(x) = x plus seeded noise; x > 1.5 hangs (with a child), x < 0.1 crashes."""
    import json, os, random, subprocess, sys, time

    x = json.load(open("params.json"))["x"]
    if x > 1.5:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        pid_file = os.environ.get("PID_FILE")
        if pid_file:
            with open(pid_file, "w") as handle:
                handle.write(f"{os.getpid()} {child.pid}")
        print("hanging", flush=True)
        time.sleep(120)
    if x < 0.1:
        raise SystemExit("x too small: the experiment crashed")
    noise = random.Random(int(os.environ["ZEROSHOT_SEED"])).gauss(0.0, 0.1)
    print("ZEROSHOT_METRIC " + json.dumps({"name": "line", "value": x + noise}))
''')


def line_task(root: Path, *, budget: float = 2.0, target: float | None = None,
              env: dict[str, str] | None = None, warm: bool = False) -> Path:
    """A one-parameter task whose metric is x plus noise (sigma 0.1), minimised; ``warm``
    runs it from a warm interpreter (``preload``)."""
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "objective.py").write_text(LINE_OBJECTIVE)
    (root / "candidate" / "params.json").write_text(json.dumps({"x": 1.0}))
    spec = {
        "name": "line", "charter": "Lower x.", "metric": "line", "direction": "minimize",
        "command": ["{python}", "objective.py"], "budgetSeconds": budget, "repeats": 3,
        "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 2.0}],
        "env": env or {},
    }
    if target is not None:
        spec["target"] = target
    if warm:
        spec["preload"] = ["json", "random"]
    (root / "task.yaml").write_text(json.dumps(spec))  # JSON is YAML
    return root
