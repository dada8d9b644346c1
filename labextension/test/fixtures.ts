import type { CandidateRow, ChartSeries, RoundRow, RunState } from '../src/types';

export function candidate(over: Partial<CandidateRow> & { candidate_id: string }): CandidateRow {
  return {
    round: 1,
    run_id: 'run-a',
    params: {},
    metric: null,
    status: 'ok',
    adopted: false,
    harness: null,
    model: null,
    cost_usd: null,
    tokens: null,
    duration_s: null,
    ...over
  };
}

export function chart(over: Partial<ChartSeries> = {}): ChartSeries {
  return {
    rounds: [1, 2, 3, 4, 5],
    values: [5, 4, null, 3.5, 2],
    best_so_far: [5, 4, 4, 3.5, 2],
    adopted: [true, true, false, true, true],
    candidate_ids: ['c1', 'c2', 'c3', 'c4', 'c5'],
    earlier: 0,
    ...over
  };
}

export function round(n: number, over: Partial<RoundRow> = {}): RoundRow {
  return {
    round: n,
    run_id: 'run-b',
    candidate_id: `c${n}`,
    approach: 'tpe',
    strategy: 'explore',
    params: { x: n },
    status: 'ok',
    metric: 10 - n,
    incumbent_id: `c${n}`,
    incumbent_metric: 10 - n,
    best_so_far: 10 - n,
    adopted: true,
    disposition: 'adopted',
    decision: 'adopted: better',
    gain: 1,
    noise_floor: 0.1,
    seeds: 1,
    gate_decision: null,
    effect_size: null,
    ...over
  };
}

export function runState(over: Partial<RunState> = {}): RunState {
  return {
    run_id: 'run-b',
    workspace: '/ws',
    title: 'rosenbrock',
    template: 'auto-research',
    study: 'rosen',
    metric: 'loss',
    direction: 'minimize',
    phase: 'running',
    is_research: true,
    rounds_done: 5,
    rounds_total: 10,
    round_in_progress: 6,
    in_flight: [],
    progress_text: '5 / 10 rounds · round 6 in progress',
    incumbent: { candidate_id: 'c5', metric: 2, round: 5 },
    plateau_text: '',
    chart: chart({ earlier: 3 }),
    rounds: [1, 2, 3, 4, 5].map(n => round(n)),
    cause: null,
    log_tail: '',
    can_stop: true,
    can_continue: false,
    continued_by: null,
    ...over
  };
}
