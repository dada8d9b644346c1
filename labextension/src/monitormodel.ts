/**
 * The run monitor's data handling (no DOM): whether to keep polling, what the buttons look
 * like in each phase, which run to show (following `continued_by`), and the words around them.
 */

import { bestSoFarFigure, Figure } from './chartdata';
import type { Phase, RoundRow, RunState, Value } from './types';

export const LIVE_PHASES: ReadonlySet<Phase> = new Set<Phase>(['admitted', 'running', 'stopping']);

export function isLive(phase: Phase): boolean {
  return LIVE_PHASES.has(phase);
}

/** Poll every second while the run is live or Continue is on offer (it may be taken elsewhere). */
export function shouldPoll(state: RunState | null): boolean {
  if (!state) return true;
  if (state.continued_by) return true; // about to follow the new run
  return isLive(state.phase) || state.can_continue;
}

export interface ButtonState {
  visible: boolean;
  disabled: boolean;
  label: string;
  title: string;
}

export interface Buttons {
  stop: ButtonState;
  continue: ButtonState;
}

/**
 * Stop: live runs can be stopped; while stopping it says so; once ended it stays visible,
 * disabled (grey). Continue: shown only when the server says the study can continue.
 */
export function buttonStates(state: RunState, pending: 'stop' | 'continue' | null = null): Buttons {
  const live = isLive(state.phase);
  const stopping = state.phase === 'stopping' || pending === 'stop';
  const stop: ButtonState = {
    visible: true,
    disabled: !live || !state.can_stop || stopping,
    label: stopping && live ? 'Stopping…' : 'Stop',
    title: live ? (stopping ? 'The run is stopping' : 'Stop this run after its current work') : `The run has ${state.phase}`
  };
  const cont: ButtonState = {
    visible: state.can_continue && !state.continued_by,
    disabled: pending === 'continue',
    label: pending === 'continue' ? 'Continuing…' : 'Continue',
    title: 'Start a new run that continues this study'
  };
  return { stop, continue: cont };
}

/** The run to show next: the one that continued this run, else this one. */
export function followTarget(state: RunState): string {
  return state.continued_by && state.continued_by !== state.run_id ? state.continued_by : state.run_id;
}

/**
 * Follows a chain of continuations from a list of states already seen (guards loops).
 * Returns the last run id and the ids passed through.
 */
export function followChain(start: string, continuedBy: (runId: string) => string | null): { runId: string; via: string[] } {
  const via: string[] = [];
  const seen = new Set<string>([start]);
  let current = start;
  for (;;) {
    const next = continuedBy(current);
    if (!next || seen.has(next)) break;
    via.push(current);
    seen.add(next);
    current = next;
  }
  return { runId: current, via };
}

export function continuedText(from: string[], current: string): string {
  if (!from.length) return '';
  return `${from[from.length - 1]} continued as ${current}`;
}

export { PHASE_WORDS, phaseTitle, phaseWord } from './words';

/** The monitor's chart: study-wide rounds, the earlier ones grey, a mark where this run starts. */
export function monitorFigure(state: RunState): Figure {
  const params = new Map<string, Record<string, Value>>();
  for (const r of state.rounds ?? []) params.set(r.candidate_id, r.params);
  return bestSoFarFigure(state.chart, {
    metric: state.metric ?? 'metric',
    params,
    runStartsAfter: state.chart.earlier
  });
}

/** The rounds table's rows, newest first, at most `limit`. */
export function newestRounds(rounds: RoundRow[], limit = 12): RoundRow[] {
  return [...rounds].sort((a, b) => b.round - a.round).slice(0, limit);
}

/** A stable signature of what the chart shows, so the monitor redraws only when it changed. */
export function chartSignature(state: RunState): string {
  const c = state.chart;
  return JSON.stringify([c.rounds, c.values, c.best_so_far, c.adopted, c.earlier]);
}
