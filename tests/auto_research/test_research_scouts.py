"""The scouts: read-only, deterministic given a seed, each strategy doing its own thing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from research_driver import STUDY, TEMPLATES, change, decide, drive, line_task, measure_pass

from zeroshot_kernel.auto_research import REMEASURE, STRATEGIES, ResearchRecords, load_task
from zeroshot_kernel.auto_research.agents import researcher, reviewer, scout
from zeroshot_kernel.auto_research.agents.space import to_unit
from zeroshot_kernel.auto_research.noise_floor import ranked
from zeroshot_kernel.auto_research.protocol import (
    ResearcherInput,
    ReviewerInput,
    ScoutInput,
    ScoutProposal,
    Strategy,
)


def _ask(
    task: Path, workspace: Path, strategy: Strategy, number: int = 4, seed: int = 0
) -> ScoutProposal:
    return scout(
        ScoutInput(
            study=STUDY,
            task=str(task),
            workspace=str(workspace),
            round=number,
            strategy=strategy,
            seed=seed,
        )
    )


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def rosenbrock(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    workspace = tmp_path_factory.mktemp("rosenbrock")
    drive(TEMPLATES / "rosenbrock", workspace, 6, seed=2)
    return TEMPLATES / "rosenbrock", workspace


@pytest.mark.slow  # real research rounds
def test_scouts_are_read_only_and_deterministic(rosenbrock: tuple[Path, Path]) -> None:
    task, workspace = rosenbrock
    before = _tree(workspace)
    for strategy in STRATEGIES:
        first = _ask(task, workspace, strategy, 7, seed=1)
        assert first == _ask(task, workspace, strategy, 7, seed=1)
        assert first.strategy == strategy and first.rationale
        load_task(task).spec.check_params(first.params)
    assert _ask(task, workspace, "exploration", 7, seed=1) != _ask(
        task, workspace, "exploration", 7, seed=2
    )
    assert _tree(workspace) == before


@pytest.mark.slow  # real research rounds
def test_exploration_is_fed_the_recorded_evaluations(rosenbrock: tuple[Path, Path]) -> None:
    task, workspace = rosenbrock
    state = ResearchRecords(workspace, STUDY).snapshot()
    measured = sum(m.metric is not None for m in state.candidates.values())
    proposal = _ask(task, workspace, "exploration", 7)
    assert proposal.approach == "exploration:ei"
    assert f"fitted to {measured} measured candidates" in proposal.rationale
    assert "the highest expected improvement" in proposal.rationale
    fresh = _ask(task, workspace.parent / "empty", "exploration", 1)
    assert "random start-up sample" in fresh.rationale and "fitted to 0" in fresh.rationale


@pytest.mark.slow  # real research rounds
def test_synthesis_draws_around_the_best_candidates(rosenbrock: tuple[Path, Path]) -> None:
    task, workspace = rosenbrock
    spec = load_task(task).spec
    best = ranked(spec, ResearchRecords(workspace, STUDY).snapshot().candidates)[:3]
    names = ", ".join(m.candidate_id for m in best)
    draws = [_ask(task, workspace, "synthesis", 7, seed=s) for s in range(20)]
    assert all(f"the 3 best ({names})" in d.rationale for d in draws)
    for p in spec.search_space:
        elite = [to_unit(p, m.params[p.name]) for m in best]
        low, high = min(elite) - 0.1, max(elite) + 0.1
        inside = [low <= to_unit(p, d.params[p.name]) <= high for d in draws]
        assert sum(inside) >= 15, "most draws fall near the best candidates"


def test_challenge_perturbs_the_incumbent_or_asks_for_a_remeasurement(tmp_path: Path) -> None:
    task = line_task(tmp_path / "task", env={"NOISE": "independent"})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    start = _ask(task, workspace, "challenge", 1)
    assert start.approach == "challenge:perturb" and "the starting candidate" in start.rationale
    assert start.params != {"x": 1.0}

    # a rival within the noise floor of an incumbent measured only three times (on these
    # seeds x = 0.85 is no better on average after three, so the race stops there)
    rival = measure_pass(task, workspace, 1, change({"x": 0.85}))
    assert not rival.supports_adoption and rival.gain <= rival.noise_floor
    assert rival.gate_decision == "not_better" and len(rival.seeds) == 3
    decide(task, workspace, rival, "accepted", adopt_it=False)
    challenge = _ask(task, workspace, "challenge", 2)
    assert challenge.approach == REMEASURE and challenge.params == {"x": 1.0}
    assert "the lead may be noise" in challenge.rationale

    proposed = researcher(
        ResearcherInput(
            study=STUDY, task=str(task), workspace=str(workspace), round=2, proposals=[challenge]
        )
    )
    assert proposed.params == {} and proposed.measurement == "discriminating"
    remeasured = measure_pass(task, workspace, 2, proposed)
    assert remeasured.candidate_id == remeasured.incumbent_id == "c000"
    assert len(remeasured.metric_repeats) == 6
    verdict = reviewer(
        ReviewerInput(
            study=STUDY,
            task=str(task),
            workspace=str(workspace),
            change=proposed,
            evidence=remeasured,
        )
    )
    assert verdict.verdict == "accepted" and not verdict.adopt
    assert (
        decide(task, workspace, remeasured, verdict.verdict, verdict.adopt).disposition == "reject"
    )
    assert _ask(task, workspace, "challenge", 3).approach == "challenge:perturb"


@pytest.mark.slow  # real research rounds
def test_every_strategy_respects_int_and_categorical_parameters(tmp_path: Path) -> None:
    task = line_task(tmp_path / "task")
    spec = json.loads((task / "task.yaml").read_text())
    spec["searchSpace"] += [
        {"name": "depth", "type": "int", "low": 1, "high": 64, "log": True},
        {"name": "kind", "type": "categorical", "choices": ["a", "b", "c"]},
        {"name": "rate", "type": "categorical", "choices": [0.1, 0.5]},
    ]
    (task / "task.yaml").write_text(json.dumps(spec))
    (task / "candidate" / "params.json").write_text(
        json.dumps({"x": 1.0, "depth": 4, "kind": "a", "rate": 0.1})
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = drive(task, workspace, 4, seed=9)
    assert all(v.verdict == "accepted" for v in run.verdicts)
    checker = load_task(task).spec
    for number in (5, 6):
        for strategy in STRATEGIES:
            proposal = _ask(task, workspace, strategy, number)
            assert checker.check_params(proposal.params) == proposal.params
            assert type(proposal.params["depth"]) is int
            assert proposal.params["kind"] in ("a", "b", "c")
    manifest = ResearchRecords(workspace, STUDY).read_manifest("c001")
    assert manifest is not None
    written = json.loads(
        (ResearchRecords(workspace, STUDY).source_dir("c001") / "params.json").read_text()
    )
    assert written == manifest.params  # proposals edit the params file, nothing else
