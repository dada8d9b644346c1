"""The human-readable records (charter, summary, backlog), rendered from the JSON records.

They are views: regenerated after every pass, so they can never disagree with the rounds
and manifests they describe.
"""

from __future__ import annotations

from zeroshot_kernel.auto_research.experiment import status_words
from zeroshot_kernel.auto_research.noise_floor import fmt, noise_sigma, ranked
from zeroshot_kernel.auto_research.protocol import ResearchResult
from zeroshot_kernel.auto_research.records import ResearchRecords, ResearchState
from zeroshot_kernel.auto_research.round_words import REMEASURED, approach_words, is_remeasure
from zeroshot_kernel.auto_research.task import ResearchTask, params_key

BACKLOG_LIMIT = 20


def charter(task: ResearchTask) -> str:
    spec = task.spec
    lines = [
        f"# Charter: {spec.name}",
        "",
        spec.charter.strip(),
        "",
        f"- Metric: `{spec.metric}` ({spec.direction})",
        f"- Experiment: `{' '.join(spec.command)}` in a scratch copy of the candidate, "
        f"budget {spec.budget_seconds:g} s, {spec.repeats} repeats per candidate",
    ]
    lines.append(
        "- Editable files: "
        + (
            ", ".join(f"`{g}`" for g in spec.editable)
            if spec.editable
            else "none (parameters only)"
        )
    )
    if spec.target is not None:
        lines.append(
            f"- Target: {spec.metric} {'<=' if spec.direction == 'minimize' else '>='} "
            f"{spec.target:g}"
        )
    if not spec.search_space:
        return (
            "\n".join(
                [
                    *lines,
                    "",
                    "## Search space",
                    "",
                    "None: a code task; change it by editing its editable files.",
                ]
            )
            + "\n"
        )
    lines += ["", "## Search space", "", "| parameter | type | domain | log |", "|---|---|---|---|"]
    for p in spec.search_space:
        domain = (
            ", ".join(map(str, p.choices)) if p.choices is not None else f"[{p.low:g}, {p.high:g}]"
        )
        lines.append(f"| {p.name} | {p.type} | {domain} | {'yes' if p.log else 'no'} |")
    return "\n".join(lines) + "\n"


def summary(task: ResearchTask, state: ResearchState) -> str:
    spec = task.spec
    results = state.results()
    lines = [f"# Research summary: {spec.name}", "", f"- Rounds completed: {len(results)}"]
    incumbent = state.incumbent
    if incumbent is not None:
        manifest = state.candidates.get(incumbent.candidate_id)
        n = len(manifest.values) if manifest else 0
        lines.append(
            f"- Incumbent: {incumbent.candidate_id} (adopted in round "
            f"{incumbent.adopted_round}), {spec.metric} {fmt(incumbent.metric)} "
            f"over {n} measurements"
        )
        last_round = max(state.rounds) if state.rounds else 0
        lines.append(
            f"- Plateau: {last_round - incumbent.adopted_round} rounds since the "
            f"incumbent last improved"
        )
    best = ranked(spec, state.candidates)
    if best:
        lines.append(f"- Best so far: {best[0].candidate_id}, {spec.metric} {fmt(best[0].metric)}")
    around = [incumbent.candidate_id] if incumbent is not None else []
    lines.append(
        f"- Noise: sigma {fmt(noise_sigma(state.candidates, around))} (repeats pooled at the "
        "incumbent's scale; each round's noise floor comes from its own paired seeds)"
    )
    lines += [
        "",
        "## Rounds",
        "",
        "| round | candidate | parent | approach | metric | gain | noise floor | seeds | "
        "gate | disposition | justification |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        failed = r.experiment_status not in ("", "ok")
        metric = status_words(r.experiment_status) if failed else fmt(r.metric)
        remeasure = is_remeasure(r.approach, r.candidate_id, r.parent_id)
        lines.append(
            f"| {r.round} | {r.candidate_id} | {r.parent_id} | "
            f"{approach_words(r.approach, r.candidate_id, r.parent_id)} | {metric} "
            f"| {fmt(r.gain if r.compared else None)} "
            f"| {fmt(r.noise_floor if r.compared else None)} | {_seeds(r)} | "
            f"{(r.gate_decision or '-').replace('_', ' ')} | "
            f"{REMEASURED if remeasure else r.disposition} | {r.justification} |"
        )
    return "\n".join(lines) + "\n"


def _seeds(result: ResearchResult) -> str:
    """The paired seeds a round's evidence rests on, over its race's budget when raced."""
    n = len(result.metric_repeats)
    return f"{n}/{result.max_seeds}" if result.max_seeds else str(n)


def render_records(task: ResearchTask, records: ResearchRecords) -> None:
    """Write the summary and the backlog again from the JSON records."""
    state = records.snapshot()
    records.write_text(records.summary_path, summary(task, state))
    records.write_text(records.backlog_path, backlog(state))


def backlog(state: ResearchState) -> str:
    """Open ideas: proposals a round did not take whose parameters were never measured."""
    tried = {params_key(m.params) for m in state.candidates.values()}
    lines = ["# Backlog (open ideas)", ""]
    count = 0
    for number in sorted(state.rounds, reverse=True):
        record = state.rounds[number]
        final = record.passes[-1]
        taken = final.change.approach if final.change else None
        for proposal in final.proposals:
            if count >= BACKLOG_LIMIT or proposal.approach == taken:
                continue
            if params_key(proposal.params) in tried:
                continue
            lines.append(
                f"- round {number}, {proposal.approach}: `{params_key(proposal.params)}`: "
                f"{proposal.rationale}"
            )
            count += 1
    if count == 0:
        lines.append("(none)")
    return "\n".join(lines) + "\n"
