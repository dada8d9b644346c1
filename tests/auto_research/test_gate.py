"""The gate that decides whether a measured gain is real, against known truths.

Simulated experiments (fast, many trials, fixed seeds) drive the public race
(:func:`noise_floor.race`) the trusted measure step runs: noise proportional to the metric
after a 100-fold drop (the case of a training loss: every real 30 % gain adopted, a step
back refused, where a sigma pooled over the study's history refused them all), candidates
identical to the incumbent (false adoptions at most 5 %), heavy-tailed noise, and the
racing itself (seeds added only while undecided, stopping at the budget and saying which
way it ended). Real experiments then show the same through the measure step and trusted
adoption, and in the evidence and views a user reads."""

from __future__ import annotations

import json
import math
import random
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from auto_research_support import copy_task, new_workspace, start
from research_driver import STUDY, TEMPLATES, change, decide, drive, measure_pass
from zeroshot_widgets.evidence_table import rounds_table, rounds_table_html

from zeroshot_kernel.auto_research import ResearchRecords
from zeroshot_kernel.auto_research.candidate_detail import candidate_detail
from zeroshot_kernel.auto_research.commands import round_line
from zeroshot_kernel.auto_research.noise_floor import (
    ALPHA,
    Borrowed,
    Gate,
    Measured,
    Paired,
    Spread,
    borrowed_sigma,
    differences,
    fmt,
    paired,
    paired_seeds,
    pooled_sigma,
    race,
    t_quantile,
)
from zeroshot_kernel.auto_research.task import TaskSpec, load_task
from zeroshot_kernel.ledger.events import SucceededResult

SEEDS = list(range(1000, 1100))
Noise = Callable[[float, random.Random], float]
"""A measurement of a true value with a random source of its own."""


def spec(repeats: int = 3, direction: str = "minimize", max_seeds: int | None = None) -> TaskSpec:
    document = {
        "name": "simulated",
        "charter": "Lower the loss.",
        "metric": "loss",
        "direction": direction,
        "command": ["true"],
        "budgetSeconds": 1,
        "repeats": repeats,
        "searchSpace": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}],
    }
    if max_seeds is not None:
        document["maxSeeds"] = max_seeds
    return TaskSpec.from_wire(document)


def proportional(relative: float) -> Noise:
    return lambda true, rng: true * (1.0 + relative * rng.gauss(0.0, 1.0))


def additive(sigma: float) -> Noise:
    return lambda true, rng: true + rng.gauss(0.0, sigma)


def student(relative: float, dof: int) -> Noise:
    """Student's t noise with ``dof`` degrees of freedom (2: infinite variance), scaled
    in proportion to the value."""

    def draw(true: float, rng: random.Random) -> float:
        chi2 = rng.gammavariate(dof / 2.0, 2.0)
        return true * (1.0 + relative * rng.gauss(0.0, 1.0) / math.sqrt(chi2 / dof))

    return draw


class Simulated:
    """An incumbent and a candidate with known true values, measured on demand: each
    (who, seed) gets its own draw, plus a part shared by both on the seed."""

    def __init__(
        self, trial: str, candidate: float, incumbent: float, noise: Noise, shared: float = 0.0
    ) -> None:
        self.trial, self.true = trial, {"candidate": candidate, "incumbent": incumbent}
        self.noise, self.shared = noise, shared
        self.looks: list[int] = []

    def value(self, who: str, seed: int) -> float:
        common = random.Random(f"{self.trial}/{seed}").gauss(0.0, self.shared)
        return self.noise(self.true[who], random.Random(f"{self.trial}/{seed}/{who}")) + common

    def __call__(self, look: Sequence[int]) -> Measured:
        self.looks.append(len(look))
        return (
            {s: self.value("candidate", s) for s in look},
            {s: self.value("incumbent", s) for s in look},
            "",
        )


def run_race(
    simulated: Simulated, task: TaskSpec | None = None, spreads: Sequence[Spread] = ()
) -> Paired:
    task = task or spec()
    scale = simulated.true["incumbent"]
    return race(
        task, Gate.of(task), SEEDS, simulated, borrowed_sigma(spreads, scale, positive=scale > 0)
    )


def first_race(
    make: Callable[[int], Simulated], decision: str = "budget_spent", seeds: int | None = None
) -> tuple[Paired, Simulated]:
    """The first of trials 0, 1, ... whose race ends with ``decision`` (on ``seeds``)."""
    for trial in range(200):
        simulated = make(trial)
        comparison = run_race(simulated)
        if comparison.decision == decision and seeds in (None, comparison.n):
            return comparison, simulated
    raise AssertionError(f"no race ended {decision}")


def spread_of(task: TaskSpec, comparison: Paired) -> Spread:
    """What the measure step keeps of a decided comparison for later borrowing."""
    d = differences(task, comparison.candidate, comparison.incumbent)
    return Spread(
        sigma=pooled_sigma([d]) or 0.0,
        scale=sum(comparison.incumbent) / comparison.n,
        dof=comparison.n - 1,
        positive=True,
    )


def test_student_t_quantiles_match_the_tables() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-3)
    assert t_quantile(0.975, 2) == pytest.approx(4.3027, abs=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.2281, abs=1e-3)
    assert t_quantile(0.995, 5) == pytest.approx(4.0321, abs=1e-3)
    assert t_quantile(0.95, 10_000) == pytest.approx(1.6450, abs=1e-3)


def test_the_gate_reads_its_budget_from_the_task() -> None:
    gate = Gate.of(spec())
    assert (gate.repeats, gate.max_seeds, gate.looks, gate.schedule) == (
        3,
        9,
        (3, 4, 5, 6, 7, 8, 9),
        (1, 3, 4, 5, 6, 7, 8, 9),
    ), "one seed, the repeats, then a look per seed"
    assert gate.alpha_per_look == pytest.approx(ALPHA / 7)
    assert Gate.of(spec(max_seeds=5)).looks == (3, 4, 5)
    assert Gate.of(spec(max_seeds=2)).looks == (3,), "a budget below the repeats is the repeats"
    doubled = Gate.of(spec(), discriminating=True)
    assert (doubled.repeats, doubled.max_seeds, doubled.schedule) == (
        6,
        18,
        (6, 8, 10, 12, 14, 16, 18),
    ), "a discriminating measurement doubles the seeds of each look: as many looks"
    assert Gate(3, 10, step=3).looks == (3, 6, 9, 10), "the budget is always a look"
    with pytest.raises(ValueError, match="step >= 1"):
        Gate(3, 9, step=0)


def test_real_30_percent_gains_are_adopted_after_a_100_fold_drop_and_a_step_back_refused() -> None:
    """A loss with 10 % noise proportional to it falls from 0.9 to 0.009, then improves by
    30 % twice; a step back follows. The study's first comparison does not set the noise
    of the later ones."""
    task = spec()
    for study in range(100):
        incumbent, spreads = 0.9, list[Spread]()
        for step, (candidate, better) in enumerate(
            [(0.009, True), (0.0063, True), (0.00441, True), (0.0063, False)]
        ):
            simulated = Simulated(f"{study}/{step}", candidate, incumbent, proportional(0.1))
            comparison = run_race(simulated, task, spreads)
            if better:
                assert comparison.decision == "better", (study, step, comparison)
                assert comparison.n <= comparison.max_seeds == 9
                incumbent = candidate
            else:
                assert comparison.decision in ("worse", "not_better"), (study, comparison)
            if comparison.n >= 2:
                spreads.append(spread_of(task, comparison))

    # One study's numbers, as its evidence shows them: the 30 % gain beats a floor at its own
    # scale, where a sigma pooled over the study's comparisons (the old rule) is dominated
    # by the first comparison and puts the floor far above the gain.
    first = run_race(Simulated("shown/0", 0.009, 0.9, proportional(0.1)), task)
    spreads = [spread_of(task, first)]
    gain = run_race(Simulated("shown/1", 0.0063, 0.009, proportional(0.1)), task, spreads)
    assert gain.decision == "better" and gain.gain > gain.noise_floor
    assert gain.noise_floor < 0.3 * 0.009
    assert gain.relative_gain is not None and 0.15 < gain.relative_gain < 0.45
    pooled = pooled_sigma([differences(task, c.candidate, c.incumbent) for c in (first, gain)])
    assert pooled is not None and 2.0 * pooled / math.sqrt(gain.n) > 10 * gain.gain
    text = gain.describe("loss", "c002", "c001")
    assert f"on {gain.n} paired seeds: gain " in text and "(+" in text and " %)" in text
    assert "sd of the paired differences" in text
    assert f"gate: better beyond the noise floor after {gain.n} of at most 9 seeds" in text


@pytest.mark.slow  # thousands of simulated races, or a real engine run
@pytest.mark.parametrize(
    "level, noise, shared",
    [
        (0.008, proportional(0.1), 0.0),  # a training loss late in its study
        (5.0, additive(0.05), 0.0),
        (-3.0, additive(0.2), 0.1),  # a part shared on the seed cancels; the rest does not
    ],
    ids=["proportional", "additive", "shared-and-own"],
)
def test_candidates_identical_to_the_incumbent_are_rarely_adopted(
    level: float, noise: Noise, shared: float
) -> None:
    trials = 2000
    decisions: Counter[str] = Counter()
    seeds = 0
    for trial in range(trials):
        simulated = Simulated(f"same/{level}/{trial}", level, level, noise, shared)
        comparison = run_race(simulated)
        decisions[comparison.decision] += 1
        seeds += comparison.n
        assert comparison.n <= 9
    rate = decisions["better"] / trials
    assert rate <= 0.05, decisions
    assert rate > 0.01, "the level is used, not wasted: about 3 % with seven looks"
    assert decisions["not_better"] > trials / 2, "most stop before the budget"
    assert seeds / trials < 7, "racing spends its budget only on the undecided"


@pytest.mark.slow  # thousands of simulated races, or a real engine run
@pytest.mark.parametrize("dof", [2, 3])
def test_heavy_tailed_noise_keeps_false_adoptions_rare_and_finds_real_gains(dof: int) -> None:
    trials = 1000
    same = Counter(
        run_race(Simulated(f"heavy/{dof}/same/{t}", 1.0, 1.0, student(0.1, dof))).decision
        for t in range(trials)
    )
    assert same["better"] / trials <= 0.05, same
    real = Counter(
        run_race(Simulated(f"heavy/{dof}/real/{t}", 0.7, 1.0, student(0.1, dof))).decision
        for t in range(trials)
    )
    assert real["better"] / trials >= 0.8, real
    back = Counter(
        run_race(Simulated(f"heavy/{dof}/back/{t}", 1.3, 1.0, student(0.1, dof))).decision
        for t in range(trials)
    )
    assert back["better"] == 0, back


def test_racing_adds_seeds_only_while_undecided_and_stops_at_the_budget() -> None:
    # Decisive from the start: the first look (after the one-seed look) settles it.
    clear = Simulated("clear", 0.5, 1.0, proportional(0.01))
    assert run_race(clear).decision == "better" and clear.looks == [1, 3]

    # The seeded noise cancels exactly on paired seeds: decided on the first full look.
    exact = Simulated("exact", 0.99, 1.0, lambda true, rng: true, shared=0.1)
    decided = run_race(exact)
    assert decided.decision == "better" and decided.exact and exact.looks == [1, 3]
    assert "the seeded noise cancels exactly" in decided.describe("loss", "c1", "c0")

    # Equal differences by chance (a discrete metric on three seeds) where comparisons at
    # this scale were noisy: judged on their sigma, not as noise that cancels.
    task = spec()
    candidate, incumbent = {1: 0.50, 2: 0.52, 3: 0.48}, {1: 0.51, 2: 0.53, 3: 0.49}
    assert paired(task, [1, 2, 3], candidate, incumbent).decision == "better"
    noisy = Borrowed(sigma=0.02, comparisons=2, dof=4, relative=True)
    chance = paired(task, [1, 2, 3], candidate, incumbent, noisy)
    assert not chance.exact and chance.decision == "undecided"
    assert chance.noise_floor > chance.gain and "all equal, by chance" in chance.floor_text()

    # A gain within the noise: more seeds at each look, until the budget is spent.
    spent, within = first_race(lambda t: Simulated(f"within/{t}", 0.99, 1.0, proportional(0.3)))
    assert within.looks == [1, 3, 4, 5, 6, 7, 8, 9] and spent.n == spent.max_seeds == 9
    assert 0 < spent.gain <= spent.noise_floor
    assert spent.decision_text() == (
        "undecided: the race spent its budget of 9 seeds with the gain within the noise floor"
    )

    # No better on average on the first full look: stopped there.
    flat, level = first_race(
        lambda t: Simulated(f"flat/{t}", 1.0, 1.0, additive(0.1)), "not_better", seeds=3
    )
    assert level.looks == [1, 3]
    assert "stopped after 3 of at most 9 seeds: no better than the incumbent on average" in (
        flat.describe("loss", "c1", "c0")
    )

    # Clearly worse after one seed, on a sigma borrowed from a comparison at this scale...
    earlier = [Spread(sigma=0.01, scale=1.1, dof=5, positive=True)]
    worse = Simulated("worse", 1.5, 1.0, proportional(0.01))
    one = run_race(worse, task, earlier)
    assert one.decision == "worse" and worse.looks == [1] and one.borrowed is not None
    assert one.describe("loss", "c1", "c0").endswith(
        "gate: stopped after one run: worse than the incumbent beyond the noise floor"
    )
    # ...but never on one 100 times larger: then the race goes on to its first full look.
    far = [Spread(sigma=1.0, scale=110.0, dof=5, positive=True)]
    assert borrowed_sigma(far, 1.0, positive=True) is None
    unborrowed = Simulated("unborrowed", 1.5, 1.0, proportional(0.01))
    assert run_race(unborrowed, task, far).decision == "worse" and unborrowed.looks == [1, 3]

    # A failed run stops the race, and says so.
    def failing(look: Sequence[int]) -> Measured:
        return {}, {s: 1.0 for s in look}, "crashed"

    failed = race(task, Gate.of(task), SEEDS, failing)
    assert failed.decision == "failed" and failed.decision_text().startswith(
        "stopped after a crashed run"
    )


def test_a_maximised_metric_is_decided_in_its_direction() -> None:
    task = spec(direction="maximize")
    up = Simulated("up", 0.9, 0.7, additive(0.02))
    assert race(task, Gate.of(task), SEEDS, up).decision == "better"
    down = Simulated("down", 0.5, 0.7, additive(0.02))
    assert race(task, Gate.of(task), SEEDS, down).decision in ("worse", "not_better")


# --- real experiments: the measure step, trusted adoption and the views -----------------

LOSS_OBJECTIVE = textwrap.dedent('''
    """A loss with 10 % noise of its own, proportional to it (seeded by the seed and the
    candidate's loss), like a training loss whose spread shrinks as it falls."""
    import json, os, random

    loss = json.load(open("params.json"))["loss"]
    own = random.Random(os.environ["ZEROSHOT_SEED"] + ":" + repr(loss)).gauss(0.0, 0.1)
    print("ZEROSHOT_METRIC " + json.dumps({"name": "loss", "value": loss * (1 + own)}))
''')


def loss_task(root: Path) -> Path:
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "objective.py").write_text(LOSS_OBJECTIVE)
    (root / "candidate" / "params.json").write_text(json.dumps({"loss": 0.9}))
    document = {
        "name": "loss",
        "charter": "Lower the loss.",
        "metric": "loss",
        "direction": "minimize",
        "command": ["{python}", "objective.py"],
        "budgetSeconds": 5,
        "repeats": 3,
        "searchSpace": [{"name": "loss", "type": "float", "low": 1e-4, "high": 10.0, "log": True}],
    }
    (root / "task.yaml").write_text(json.dumps(document))
    return root


@pytest.mark.slow  # real experiments, many measurements
def test_real_experiments_keep_each_real_gain_after_a_100_fold_drop(tmp_path: Path) -> None:
    task = loss_task(tmp_path / "task")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    steps = [(0.009, "adopt"), (0.0063, "adopt"), (0.00441, "adopt"), (0.0063, "reject")]
    incumbent = "c000"
    for number, (loss, disposition) in enumerate(steps, start=1):
        evidence = measure_pass(task, workspace, number, change({"loss": loss}, parent=incumbent))
        result = decide(task, workspace, evidence)
        assert result.disposition == disposition, evidence.summary
        assert evidence.max_seeds == result.max_seeds == 9
        assert 1 <= len(evidence.seeds) <= 9
        assert evidence.gate_decision == result.gate_decision
        if disposition == "adopt":
            assert evidence.gate_decision == "better" and evidence.gain > evidence.noise_floor
            assert evidence.incumbent_metric is not None
            # Its own scale: a floor pooled with the 100-fold drop's would exceed the
            # incumbent itself; a race decided on the first look it can sits just below the gain.
            assert evidence.noise_floor < 0.5 * evidence.incumbent_metric
            assert "(gate: better beyond the noise floor after" in result.justification
            incumbent = evidence.candidate_id
        else:
            assert evidence.gate_decision in ("worse", "not_better")
        line = evidence.summary.splitlines()[0]
        assert f"on {len(evidence.seeds)} paired seed" in line and "noise floor" in line
        assert "gate: " in line

    records = ResearchRecords(workspace, STUDY)
    summary = records.summary_path.read_text()
    assert "| seeds | gate | disposition |" in summary
    assert "| better | adopt |" in summary
    detail = candidate_detail(str(workspace), STUDY, "c002")
    assert detail.review is not None
    decision = detail.review.noise_decision
    assert "beats the noise floor" in decision and "paired seeds: better beyond" in decision


def test_a_bundled_task_is_decided_on_honest_noise(tmp_path: Path) -> None:
    """Rosenbrock's noise now has a part of each candidate's own: no decision rests on
    noise that cancels exactly, and every comparison shows its gate's numbers."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = drive(TEMPLATES / "rosenbrock", workspace, 4, seed=3)
    raced = [e for e in run.passes if e.gate_decision is not None]
    assert raced, "the rounds compared candidates with the incumbent"
    for evidence in raced:
        first = evidence.summary.splitlines()[0]
        assert "cancels exactly" not in first and "gate: " in first
        budget = 18 if evidence.measurement == "discriminating" else 9
        assert evidence.max_seeds == budget and len(evidence.seeds) <= budget
        if len(evidence.seeds) >= 2:
            assert evidence.effect_size is not None and evidence.noise_floor > 0
    for result in run.results:
        if result.disposition == "adopt":
            assert result.gate_decision == "better" and result.gain > result.noise_floor
    # the task's charter says what its noise is
    charter = load_task(TEMPLATES / "rosenbrock").spec.charter
    assert "10 % of the value" in charter and "paired seeds cancel" in charter


@pytest.mark.slow  # thousands of simulated races, or a real engine run
def test_an_engine_run_shows_the_gates_numbers_in_every_view(tmp_path: Path) -> None:
    """Through the engine: the ledger's view, the round lines of `research run` and
    `research show`, the evidence table and the candidate view show gain, noise floor,
    seeds of the budget and the gate's decision."""
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "branin", repeats=2)
    research = start(workspace, task, 2)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()
    assert [r.round for r in view.rounds] == [1, 2]
    html = rounds_table_html(rounds_table(view))
    raced = [r for r in view.rounds if r.gate_decision is not None]  # not a change refused
    assert raced
    for round_view in raced:
        assert round_view.gate_decision is not None
        budget = 12 if round_view.passes > 1 else 6
        assert round_view.max_seeds in (6, 12) and 1 <= round_view.seeds <= budget
        assert round_view.gate.startswith(
            f"gain {fmt(round_view.gain)} against the noise floor {fmt(round_view.noise_floor)}"
            f" on {paired_seeds(round_view.seeds)}: "
        )
        decision = round_view.gate_decision.replace("_", " ")
        assert round_line(round_view).endswith(
            f"{round_view.seeds}/{round_view.max_seeds} seeds, {decision}"
        )
        assert f"{round_view.seeds}/{round_view.max_seeds} seeds · {decision}" in html
        review = candidate_detail(str(workspace), research.records.study, round_view.candidate_id)
        assert review.review is not None
        assert f"on {paired_seeds(round_view.seeds)}: " in review.review.noise_decision
