"""scikit-learn is the ``tasks`` extra, not a core dependency: without it the core still
imports, and the bundled svc-digits task's experiments end in one line saying what to
install (no traceback), through the same warm interpreter the demo uses (in its box)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from auto_research_support import box_visible_folder, copy_task
from packaging.requirements import Requirement

from zeroshot_kernel.auto_research import load_task

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HINT = (
    "this task needs scikit-learn (module 'sklearn'), which is not installed: "
    "pip install 'zeroshot-workbench[tasks]'"
)
# Imported first by every Python started with this folder on PYTHONPATH (the experiment's
# warm interpreter gets it from the task's env): scikit-learn cannot be imported there.
BLOCKER = """\
import sys

class _NoScikitLearn:
    def find_spec(self, name, path=None, target=None):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoScikitLearn())
"""
RUN_SVC_DIGITS = """\
import json, sys
from zeroshot_kernel.auto_research import load_task, run_experiment
assert "sklearn" not in sys.modules
task = load_task(sys.argv[1])
assert task.spec.preload, "svc-digits runs warm"
result = run_experiment(task, task.candidate_dir, seed=1)
print(json.dumps(result.to_wire()))
"""


def _without_scikit_learn(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(blocker), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_scikit_learn_is_the_tasks_extra_and_the_installs_that_need_it_ask_for_it() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    core = {Requirement(r).name for r in project["dependencies"]}
    assert "scikit-learn" not in core
    assert [Requirement(r).name for r in project["optional-dependencies"]["tasks"]] == [
        "scikit-learn"
    ]
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    for extras in ("'.[lab,tasks]'", "'.[lab,tasks,test,docs]'"):  # make demo, make test
        assert f"pip install --quiet -e {extras}" in makefile


def test_svc_digits_without_scikit_learn_says_what_to_install(tmp_path: Path) -> None:
    """The experiment sees only the task's environment (and boxed, none of this test's
    folders below /tmp): the task's env points its Python at the blocker."""
    with box_visible_folder() as blocker:
        (blocker / "sitecustomize.py").write_text(BLOCKER)
        env = {**load_task(PROJECT_ROOT / "research_templates" / "svc-digits").spec.env}
        task = copy_task(tmp_path, "svc-digits", env={**env, "PYTHONPATH": str(blocker)})
        ran = _without_scikit_learn(tmp_path, "-c", RUN_SVC_DIGITS, str(tmp_path / task))
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout)
    assert result["status"] == "crashed" and result["exitCode"] == 1, result
    assert result["outputTail"].strip() == HINT
    assert "Traceback" not in ran.stdout + ran.stderr


def test_the_blocker_really_blocks_and_other_missing_modules_keep_their_traceback(
    tmp_path: Path,
) -> None:
    """The test above is not vacuous: in the same setting an import of scikit-learn fails,
    and a module no extra provides is reported as before, with its traceback."""
    ran = _without_scikit_learn(tmp_path, "-c", "import sklearn")
    assert ran.returncode == 1 and "No module named 'sklearn'" in ran.stderr
    task = tmp_path / "task"
    (task / "candidate").mkdir(parents=True)
    (task / "candidate" / "params.json").write_text('{"x": 1.0}')
    (task / "candidate" / "train.py").write_text("import zeroshot_no_such_module\n")
    (task / "task.yaml").write_text(
        json.dumps(
            {
                "name": "missing",
                "charter": "c",
                "metric": "m",
                "direction": "minimize",
                "command": ["{python}", "train.py"],
                "budgetSeconds": 30,
                "repeats": 2,
                "preload": ["json"],
                "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 2.0}],
            }
        )
    )
    other = _without_scikit_learn(tmp_path, "-c", RUN_SVC_DIGITS, str(task))
    assert other.returncode == 0, other.stderr[-3000:]
    tail = json.loads(other.stdout)["outputTail"]
    assert "Traceback" in tail and "zeroshot_no_such_module" in tail
