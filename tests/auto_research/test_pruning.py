"""Pruning: intermediate metric lines, the median and successive-halving rules, and the
runner that kills a run its pruner stops (recorded ``pruned``, never adopted)."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path
from typing import Any

import optuna
import pytest
from research_driver import STUDY, change, decide, measure_pass
from support import alive, read_pid_file, wait_until

from zeroshot_kernel.auto_research import ResearchRecords, load_task, run_experiment
from zeroshot_kernel.auto_research.candidate_detail import candidate_detail
from zeroshot_kernel.auto_research.experiment import METRIC_PREFIX, ExperimentResult, parse_metric
from zeroshot_kernel.auto_research.pruning import (
    MALFORMED,
    MAX_CURVE_POINTS,
    CurveRecorder,
    LearningCurve,
    MedianPruner,
    Pruning,
    Reference,
    SuccessiveHalvingPruner,
    Watch,
    halving_rule,
    median_rule,
    read_point,
    reference_of,
    references_by_seed,
)
from zeroshot_kernel.auto_research.task import TaskError
from zeroshot_kernel.sandbox import Containment

optuna.logging.set_verbosity(optuna.logging.WARNING)

STEPS = 20
STEP_SECONDS = 0.05
"""A whole run: about a second (20 steps); a hopeless one is pruned after a few."""

CURVE = (
    textwrap.dedent('''
    """A learning curve: loss = level + 4 / step (+ seeded noise), one step every 50 ms;
    `lie` prints a fine curve and a poor final value, `garbage` interleaves bad lines."""
    import json, os, random, sys, time

    params = json.load(open("params.json"))
    level = params["level"]
    noise = random.Random(os.environ["ZEROSHOT_SEED"]).gauss(0.0, 0.01)
    pid_file = os.environ.get("PID_FILE")
    if pid_file:
        with open(pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(pid_file + ".tmp", pid_file)

    def say(document):
        print("ZEROSHOT_METRIC " + json.dumps(document), flush=True)

    for step in range(1, STEPS + 1):
        value = level + 4.0 / step + noise
        if params.get("lie"):
            value = 0.0
        if params.get("garbage"):
            print("ZEROSHOT_METRIC {not json", flush=True)
            say({"name": "loss", "value": "low", "step": step})
            say({"name": "loss", "value": 0.0, "step": -1})
            say({"name": "loss", "value": 0.0, "step": True})
            say({"name": "loss", "value": 0.0, "step": "7"})
            say({"name": "other", "value": 0.0, "step": step})
            print('ZEROSHOT_METRIC {"name": "loss", "value": NaN, "step": %d}' % step, flush=True)
            print("x" * 100000, flush=True)
        say({"name": "loss", "value": value, "step": step})
        if params.get("garbage"):
            say({"name": "loss", "value": 0.0, "step": step})  # the same step again: ignored
            say({"name": "loss", "value": 0.0, "step": 1})  # back in time: ignored
        time.sleep(STEP_SECONDS)
    say({"name": "loss", "value": level + 4.0 / STEPS + noise})
''')
    .replace("STEPS", str(STEPS))
    .replace("STEP_SECONDS", str(STEP_SECONDS))
)


def curve_task(
    root: Path,
    *,
    pruner: dict[str, Any] | None = None,
    level: float = 1.0,
    warm: bool = False,
    env: dict[str, str] | None = None,
    **params: Any,
) -> Path:
    """A task whose curves differ by ``level`` (the loss it tends to)."""
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "train.py").write_text(CURVE)
    (root / "candidate" / "params.json").write_text(json.dumps({"level": level, **params}))
    spec: dict[str, Any] = {
        "name": "curves",
        "charter": "lower the loss",
        "metric": "loss",
        "direction": "minimize",
        "command": ["{python}", "train.py"],
        "budgetSeconds": 20,
        "repeats": 2,
        "searchSpace": [{"name": "level", "type": "float", "low": 0.0, "high": 10.0}],
        "env": env or {},
    }
    if pruner is not None:
        spec["pruner"] = pruner
    if warm:
        spec["preload"] = ["json"]
    (root / "task.yaml").write_text(json.dumps(spec))
    return root


def set_params(root: Path, **params: Any) -> Path:
    (root / "candidate" / "params.json").write_text(json.dumps(params))
    return root / "candidate"


MEDIAN = {"kind": "median", "warmupSteps": 3, "minRuns": 1}
MODES = pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])


def _pruning_after(root: Path, *runs: ExperimentResult) -> Pruning:
    task = load_task(root)
    assert task.spec.pruner is not None
    references = references_by_seed([(f"c{i}", r) for i, r in enumerate(runs)], "minimize")
    return Pruning(task.spec.pruner, "minimize", references)


# --- the experiment runner ---------------------------------------------------------------


@pytest.mark.slow  # real studies with pruned experiments
@MODES
def test_a_hopeless_run_is_pruned_and_killed_before_its_end(tmp_path: Path, warm: bool) -> None:
    pid_file = tmp_path / "pid"
    root = curve_task(tmp_path / "t", pruner=MEDIAN, warm=warm, env={"PID_FILE": str(pid_file)})
    task = load_task(root)
    incumbent = run_experiment(task, task.candidate_dir, seed=1)
    assert incumbent.status == "ok" and incumbent.pruned is None
    assert incumbent.curve is not None and incumbent.curve.reported == STEPS
    assert incumbent.curve.steps == list(range(1, STEPS + 1))
    pruning = _pruning_after(root, incumbent)

    hopeless = run_experiment(
        task,
        set_params(root, level=3.0),
        seed=1,
        pruning=pruning,
        containment=Containment("none"),  # this machine's pids: the group is seen to go
    )
    assert hopeless.duration_seconds < incumbent.duration_seconds
    assert hopeless.status == "pruned" and hopeless.metric is None
    decided = hopeless.pruned
    assert decided is not None and decided.step == 3  # the first step past the warm-up
    assert hopeless.curve is not None and hopeless.curve.last_step == decided.step
    assert decided.value == hopeless.curve.last_value == pytest.approx(3.0 + 4.0 / 3, abs=0.05)
    assert "median" in decided.rule and decided.describe() in hopeless.output_tail
    pid = int(read_pid_file(pid_file))
    wait_until(lambda: not alive(pid), 5, "the pruned experiment to be gone")

    better = run_experiment(task, set_params(root, level=0.5), seed=1, pruning=pruning)
    assert better.status == "ok" and better.pruned is None
    assert better.metric == pytest.approx(0.5 + 4.0 / STEPS, abs=0.05)
    assert better.curve is not None and better.curve.reported == STEPS


def test_a_pruned_run_is_judged_on_the_same_seed_only(tmp_path: Path) -> None:
    """References are the earlier runs on the run's own seed: on a seed no earlier run
    has, there is nothing to compare with, and it runs to its end."""
    root = curve_task(tmp_path / "t", pruner=MEDIAN)
    task = load_task(root)
    incumbent = run_experiment(task, task.candidate_dir, seed=1)
    hopeless = run_experiment(
        task, set_params(root, level=3.0), seed=2, pruning=_pruning_after(root, incumbent)
    )
    assert hopeless.status == "ok" and hopeless.curve is not None
    assert hopeless.curve.reported == STEPS


def test_malformed_lines_and_lying_steps_are_ignored(tmp_path: Path) -> None:
    root = curve_task(tmp_path / "t", pruner=MEDIAN, garbage=True)
    task = load_task(root)
    run = run_experiment(task, task.candidate_dir, seed=1)
    assert run.status == "ok" and run.metric == pytest.approx(1.2, abs=0.05)
    curve = run.curve
    assert curve is not None and curve.steps == list(range(1, STEPS + 1))
    assert all(v > 1.0 for v in curve.values), "only the well-formed, growing points count"
    # per step: a value that is text, step -1, true and "7", NaN, the same step, step 1
    assert curve.ignored == 7 * STEPS
    garbage = run_experiment(
        task,
        set_params(root, level=3.0, garbage=True),
        seed=1,
        pruning=_pruning_after(root, run),
    )
    assert garbage.status == "pruned" and garbage.pruned is not None
    assert garbage.pruned.step == 3 and garbage.pruned.value > 3.0


def test_a_lying_curve_keeps_its_run_going_and_its_final_metric_decides(tmp_path: Path) -> None:
    root = curve_task(tmp_path / "t", pruner=MEDIAN)
    task = load_task(root)
    incumbent = run_experiment(task, task.candidate_dir, seed=1)
    liar = run_experiment(
        task,
        set_params(root, level=3.0, lie=True),
        seed=1,
        pruning=_pruning_after(root, incumbent),
    )
    assert liar.status == "ok" and liar.metric == pytest.approx(3.2, abs=0.05)
    # as a reference, its curve is never better than where it ended
    reference = reference_of("c001", liar, "minimize")
    assert reference is not None and min(reference.points.values()) == liar.metric


@pytest.mark.slow  # real studies with pruned experiments
def test_pruning_is_off_by_default(tmp_path: Path) -> None:
    root = curve_task(tmp_path / "t")
    assert load_task(root).spec.pruner is None
    workspace = tmp_path / "ws"
    workspace.mkdir()
    evidence = measure_pass(root, workspace, 1, change({"level": 3.0}))
    assert evidence.experiment_status == "ok" and not evidence.supports_adoption
    manifest = ResearchRecords(workspace, STUDY).read_manifest(evidence.candidate_id)
    assert manifest is not None and manifest.measurements
    for measurement in manifest.measurements:
        run = measurement.experiment
        assert run.status == "ok" and run.pruned is None
        assert run.curve is not None and run.curve.reported == STEPS  # recorded all the same


@pytest.mark.slow  # real studies with pruned experiments
def test_a_study_records_a_pruned_candidate_and_never_adopts_it(tmp_path: Path) -> None:
    root = curve_task(tmp_path / "t", pruner=MEDIAN)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    records = ResearchRecords(workspace, STUDY)

    hopeless = measure_pass(root, workspace, 1, change({"level": 3.0}))
    assert hopeless.experiment_status == "pruned" and not hopeless.supports_adoption
    assert hopeless.metric is None and "pruned at step 3" in hopeless.summary
    result = decide(root, workspace, hopeless)
    assert result.disposition == "reject" and "pruned" in result.justification
    incumbent = records.read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c000"
    manifest = records.read_manifest(hopeless.candidate_id)
    assert manifest is not None and manifest.status == "pruned" and manifest.metric is None
    (run,) = [m.experiment for m in manifest.measurements]  # the race stopped there
    assert run.pruned is not None and run.curve is not None
    assert run.pruned.value == run.curve.last_value and run.pruned.step == run.curve.last_step
    baseline = records.read_manifest("c000")
    assert baseline is not None and all(m.experiment.status == "ok" for m in baseline.measurements)

    detail = candidate_detail(workspace, STUDY, hopeless.candidate_id)
    (seed_run,) = detail.measurements
    assert seed_run.status == "pruned" and seed_run.pruned.startswith("pruned at step 3 (value")
    summary = (workspace / ".zeroshot" / "research" / STUDY / "summary.md").read_text()
    assert f"| 1 | {hopeless.candidate_id} | c000 | exploration:manual | pruned |" in summary

    good = measure_pass(root, workspace, 2, change({"level": 0.2}))
    assert good.experiment_status == "ok" and good.supports_adoption
    assert decide(root, workspace, good).disposition == "adopt"


def test_the_pruner_is_validated_with_clear_errors(tmp_path: Path) -> None:
    for pruner, said in (
        ({"kind": "mean"}, "a pruner's kind is median or successive-halving (not 'mean')"),
        ({"warmupSteps": 3}, "a pruner's kind is median or successive-halving (none given)"),
        ({"kind": "median", "warmupSteps": -1}, "pruner.median.warmupSteps"),
        ({"kind": "successive-halving", "reductionFactor": 1}, "reductionFactor"),
        ({"kind": "median", "patience": 3}, "pruner.median.patience: Extra inputs"),
    ):
        root = curve_task(tmp_path / str(len(list(tmp_path.iterdir()))), pruner=pruner)
        with pytest.raises(TaskError, match=r"task\.yaml is invalid") as raised:
            load_task(root)
        assert said in str(raised.value)
    good = curve_task(
        tmp_path / "sh", pruner={"kind": "successive-halving", "minResource": 2, "minRuns": 2}
    )
    spec = load_task(good).spec.pruner
    assert isinstance(spec, SuccessiveHalvingPruner)
    assert (spec.min_resource, spec.reduction_factor, spec.min_runs) == (2, 4, 2)


# --- lines and curves --------------------------------------------------------------------


def test_intermediate_lines_are_read_strictly_and_never_count_as_the_metric() -> None:
    def line(document: object) -> str:
        return METRIC_PREFIX + json.dumps(document)

    assert read_point(line({"name": "m", "value": 1.5, "step": 3}), METRIC_PREFIX, "m") == (3, 1.5)
    assert read_point(line({"name": "m", "value": 2, "step": 4.0}), METRIC_PREFIX, "m") == (4, 2.0)
    for bad in (
        {"value": 1.0, "step": -1},
        {"value": 1.0, "step": 2.5},
        {"value": 1.0, "step": True},
        {"value": 1.0, "step": "3"},
        {"value": 1.0, "step": 10**10},
        {"value": True, "step": 1},
        {"value": "1", "step": 1},
        {"value": None, "step": 1},
    ):
        assert read_point(line({"name": "m", **bad}), METRIC_PREFIX, "m") == MALFORMED, bad
    nan = METRIC_PREFIX + '{"name": "m", "value": NaN, "step": 1}'
    assert read_point(nan, METRIC_PREFIX, "m") == MALFORMED
    for other in (
        line({"name": "m", "value": 1.0}),  # the final metric
        line({"name": "other", "value": 1.0, "step": 1}),
        line(["step"]),
        METRIC_PREFIX + '{"step": ',
        "step 3: loss 0.1",
        " " + line({"name": "m", "value": 1.0, "step": 1}),
    ):
        assert read_point(other, METRIC_PREFIX, "m") is None, other
    output = "\n".join(
        [line({"name": "m", "value": 0.5}), line({"name": "m", "value": 0.1, "step": 9})]
    )
    assert parse_metric(output, "m") == 0.5
    assert parse_metric(line({"name": "m", "value": 0.1, "step": 9}), "m") is None


def test_a_curve_is_bounded_evenly_and_keeps_its_last_point() -> None:
    recorder = CurveRecorder()
    for step in range(10_000):
        assert recorder.add(step, float(step))
    assert not recorder.add(5, 0.0)
    curve = recorder.curve()
    assert curve is not None
    assert MAX_CURVE_POINTS // 2 <= len(curve.steps) <= MAX_CURVE_POINTS
    assert curve.steps == list(range(0, 10_000, curve.stride))
    assert curve.values == [float(s) for s in curve.steps]
    assert (curve.reported, curve.ignored, curve.last_step, curve.last_value) == (
        10_000,
        1,
        9_999,
        9_999.0,
    )
    assert curve.points()[9_999] == 9_999.0
    assert CurveRecorder().curve() is None
    assert LearningCurve.from_wire(curve.to_wire()) == curve


def test_references_are_bounded_by_where_their_runs_ended() -> None:
    def run(status: str, metric: float | None, values: list[float], seed: int = 1) -> Any:
        curve = LearningCurve(
            steps=list(range(1, len(values) + 1)),
            values=values,
            reported=len(values),
            last_step=len(values),
            last_value=values[-1],
        )
        return ExperimentResult(
            status=status,  # type: ignore[arg-type]
            metric=metric,
            seed=seed,
            duration_seconds=1.0,
            exit_code=0,
            output_tail="",
            curve=curve,
        )

    honest = reference_of("a", run("ok", 1.0, [3.0, 2.0, 1.0]), "minimize")
    assert honest is not None and dict(honest.points) == {1: 3.0, 2: 2.0, 3: 1.0}
    liar = reference_of("b", run("ok", 2.0, [0.0, 0.0, 0.0]), "minimize")
    assert liar is not None and dict(liar.points) == {1: 2.0, 2: 2.0, 3: 2.0}
    maximizing = reference_of("c", run("ok", 0.5, [0.9, 0.4]), "maximize")
    assert maximizing is not None and dict(maximizing.points) == {1: 0.5, 2: 0.4}
    pruned = reference_of("d", run("pruned", None, [5.0, 4.0]), "minimize")
    assert pruned is not None and not pruned.completed and dict(pruned.points) == {1: 5.0, 2: 4.0}
    assert reference_of("e", run("crashed", None, [1.0]), "minimize") is None
    runs = [("a", run("ok", 1.0, [1.0])), ("b", run("ok", 1.0, [1.0], seed=2))]
    by_seed = references_by_seed([*runs, ("x", run("ok", 1.0, [1.0]))], "minimize", exclude="x")
    assert {seed: [r.candidate_id for r in refs] for seed, refs in by_seed.items()} == {
        1: ["a"],
        2: ["b"],
    }


# --- the rules, against Optuna's --------------------------------------------------------


def _reference(name: str, points: dict[int, float], completed: bool = True) -> Reference:
    return Reference(name, completed, points, tuple(sorted(points)))


def test_the_median_rule() -> None:
    pruner = MedianPruner(kind="median", warmup_steps=2, interval_steps=1, min_runs=2)
    references = [
        _reference("a", {1: 5.0, 2: 4.0, 3: 3.0}),
        _reference("b", {1: 7.0, 2: 6.0, 3: 5.0}),
        _reference("p", {1: 0.0, 2: 0.0, 3: 0.0}, completed=False),  # pruned: not compared
    ]
    assert median_rule(pruner, "minimize", 1, None, 99.0, references) is None  # warm-up
    said = median_rule(pruner, "minimize", 2, 1, 5.5, references)
    assert said is not None and "median 5" in said and "2 earlier runs" in said
    assert median_rule(pruner, "minimize", 2, 1, 5.0, references) is None  # not worse
    assert median_rule(pruner, "minimize", 4, 3, 99.0, references) is None  # no runs there
    assert median_rule(pruner, "maximize", 3, 2, 3.5, references) is not None
    assert median_rule(pruner, "maximize", 3, 2, 4.0, references) is None
    one = [references[0]]
    assert median_rule(pruner, "minimize", 3, 2, 99.0, one) is None  # fewer than minRuns
    every_third = MedianPruner(kind="median", warmup_steps=1, interval_steps=3, min_runs=1)
    many = [_reference("a", {s: 1.0 for s in range(10)})]
    judged = [s for s in range(10) if median_rule(every_third, "minimize", s, s - 1, 2.0, many)]
    assert judged == [1, 4, 7]
    skipping = median_rule(every_third, "minimize", 5, 3, 2.0, many)  # first of 4..6
    assert skipping is not None
    # the best value so far is what is compared
    watch = Watch(pruner, "minimize", tuple(references))
    assert watch.report(1, 1.0) is None and watch.report(2, 9.0) is None
    decided = watch.report(3, 9.0)
    assert decided is None  # best so far 1.0 beats the median 4.0


def test_the_successive_halving_rule() -> None:
    pruner = SuccessiveHalvingPruner(
        kind="successive-halving", min_resource=1, reduction_factor=2, min_runs=1
    )
    references = [
        _reference("a", {1: 4.0, 2: 3.0, 4: 2.0}),
        _reference("b", {1: 6.0, 3: 5.0}, completed=False),  # pruned runs compete too
        _reference("c", {1: 8.0, 2: 7.0}),
    ]
    # rung 0 at step 1: best 2 of 4 (2.0, 4.0 | 6.0, 8.0) go on
    assert halving_rule(pruner, "minimize", 1, 5.0, 0, references) == (1, None)
    rung, said = halving_rule(pruner, "minimize", 1, 6.5, 0, references)
    assert rung == 0 and said is not None and "best 2 of 4" in said
    # rung 1 at step 2: values at the first step at or past 2 (3.0, 5.0, 7.0)
    assert halving_rule(pruner, "minimize", 2, 5.0, 1, references) == (2, None)
    assert halving_rule(pruner, "minimize", 2, 5.1, 1, references)[1] is not None
    # one report may pass several rungs; before the next rung nothing is judged
    assert halving_rule(pruner, "minimize", 4, 1.0, 0, references) == (3, None)
    assert halving_rule(pruner, "minimize", 7, 99.0, 3, references) == (3, None)
    # fewer than minRuns earlier runs at a rung: it goes on
    strict = pruner.model_copy(update={"min_runs": 4})
    assert halving_rule(strict, "minimize", 2, 99.0, 0, references) == (2, None)
    assert halving_rule(pruner, "maximize", 1, 7.0, 0, references) == (1, None)
    assert halving_rule(pruner, "maximize", 1, 4.5, 0, references)[1] is not None


def _random_curves(
    rng: random.Random, count: int, *, dense: bool = False
) -> list[dict[int, float]]:
    """Noisy decreasing curves of random levels, on random steps (``dense``: 1, 2, ...:
    a reference that jumps over two rungs at once is given its rung values one report
    apart by Optuna, which we do not copy)."""
    curves = []
    for _ in range(count):
        length = rng.randint(5, 30)
        steps = range(1, length + 1) if dense else sorted(rng.sample(range(1, 40), length))
        level = rng.uniform(0.0, 2.0)
        curves.append({s: level + 3.0 / s + rng.gauss(0.0, 0.2) for s in steps})
    return curves


def _optuna_first_pruned(
    pruner: optuna.pruners.BasePruner, references: list[dict[int, float]], curve: dict[int, float]
) -> int | None:
    study = optuna.create_study(direction="minimize", pruner=pruner)
    for points in references:  # reported through the pruner, as Optuna's own trials are
        trial = study.ask()
        for step, value in points.items():
            trial.report(value, step)
            trial.should_prune()
        study.tell(trial, list(points.values())[-1])
    trial = study.ask()
    for step, value in curve.items():
        trial.report(value, step)
        if trial.should_prune():
            return step
    return None


def _ours_first_pruned(
    pruner: MedianPruner | SuccessiveHalvingPruner,
    references: list[dict[int, float]],
    curve: dict[int, float],
) -> int | None:
    watch = Watch(
        pruner, "minimize", tuple(_reference(str(i), p) for i, p in enumerate(references))
    )
    return next((step for step, value in curve.items() if watch.report(step, value)), None)


@pytest.mark.parametrize("kind", ["median", "successive-halving"])
def test_the_rules_decide_as_optunas_pruners(kind: str) -> None:
    rng = random.Random(29)
    agreed = pruned = 0
    for case in range(60):
        references = _random_curves(rng, rng.randint(0, 6), dense=kind != "median")
        curves = _random_curves(rng, 1)
        ours: MedianPruner | SuccessiveHalvingPruner
        if kind == "median":
            warmup, interval = rng.randint(0, 5), rng.randint(1, 3)
            theirs: optuna.pruners.BasePruner = optuna.pruners.MedianPruner(
                n_startup_trials=0, n_warmup_steps=warmup, interval_steps=interval, n_min_trials=1
            )
            ours = MedianPruner(
                kind="median", warmup_steps=warmup, interval_steps=interval, min_runs=1
            )
        else:
            resource, factor = rng.randint(1, 4), rng.randint(2, 4)
            theirs = optuna.pruners.SuccessiveHalvingPruner(
                min_resource=resource, reduction_factor=factor
            )
            ours = SuccessiveHalvingPruner(
                kind="successive-halving",
                min_resource=resource,
                reduction_factor=factor,
                min_runs=1,
            )
        expected = _optuna_first_pruned(theirs, references, curves[0])
        assert _ours_first_pruned(ours, references, curves[0]) == expected, case
        agreed += 1
        pruned += expected is not None
    assert agreed == 60 and 10 <= pruned <= 50, "the cases prune some runs and keep others"
