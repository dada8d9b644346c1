/**
 * What the views say, as pure functions (no DOM): a run's phase in the CLI's words
 * (`zeroshot status`, `zeroshot runs`), a gate's decision, a study's incumbent, and what the
 * monitor says after Stop once the run has ended.
 */

import { formatNumber } from './tablemodel';
import type { IncumbentRef, Phase } from './types';

/** A run's phase as the CLI and the widgets say it (`succeeded`, not `finished`). */
export const PHASE_WORDS: Record<Phase, string> = {
  admitted: 'admitted',
  running: 'running',
  stopping: 'stopping',
  succeeded: 'succeeded',
  failed: 'failed',
  stopped: 'stopped'
};

/** The longer sentence a phase badge's tooltip gives. */
export const PHASE_TITLES: Record<Phase, string> = {
  admitted: 'admitted: in the ledger, waiting for its controller to start it',
  running: 'running: its controller is working on it',
  stopping: 'stopping: a stop was requested; its controller is closing it',
  succeeded: 'succeeded: the run ended and did all it was asked',
  failed: 'failed: the run ended on an error',
  stopped: 'stopped: someone stopped the run (zeroshot stop, or a Stop button)'
};

export const END_PHASES: ReadonlySet<Phase> = new Set<Phase>(['succeeded', 'failed', 'stopped']);

function own<T extends object>(obj: T, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

export function phaseWord(phase: Phase): string {
  return own(PHASE_WORDS, phase) ? PHASE_WORDS[phase] : String(phase);
}

export function phaseTitle(phase: Phase): string {
  return own(PHASE_TITLES, phase) ? PHASE_TITLES[phase] : String(phase);
}

/** How a gate's race over paired seeds ended, in words (the server sends the key). */
export const GATE_WORDS: Record<string, string> = {
  better: 'better beyond the noise floor',
  worse: 'worse beyond the noise floor',
  not_better: 'no better on average',
  budget_spent: 'undecided: the race spent its seeds',
  failed: 'stopped after a failed run',
  undecided: 'undecided'
};

export function gateWords(decision: string | null | undefined): string {
  if (!decision) return 'not raced';
  return own(GATE_WORDS, decision) ? GATE_WORDS[decision] : decision.replace(/_/g, ' ');
}

/** A study row's incumbent: `incumbent rosenbrock = 23.32` (the value is its metric's). */
export function incumbentText(metric: string, incumbent: IncumbentRef | null): string {
  if (!incumbent) return `no incumbent yet (${metric})`;
  const value = incumbent.metric === null ? 'not measured' : formatNumber(incumbent.metric);
  return `incumbent ${metric} = ${value}`;
}

/** What the monitor last did for the user (Stop, Continue) and what the server said. */
export interface Notice {
  action: 'stop' | 'continue' | 'error';
  /** The run the notice is about. */
  runId: string;
  text: string;
}

/** What a run that has ended says in place of the stop it was asked for. */
export function endText(phase: Phase, canContinue = false): string {
  if (phase === 'stopped') {
    return canContinue ? 'the run has stopped; Continue starts a new run that carries on its study' : 'the run has stopped';
  }
  if (phase === 'succeeded') return 'the run has succeeded (it ended before the stop)';
  if (phase === 'failed') return 'the run has failed';
  return `the run has ${phaseWord(phase)}`;
}

/**
 * The monitor's message line for the run shown (`phase` null until its state is read): a
 * Stop's reply ("stop requested; …") while the run is live, its end state once it has ended
 * (the request is over); a notice about another run says nothing here.
 */
export function noticeText(notice: Notice | null, runId: string, phase: Phase | null, canContinue = false): string {
  if (!notice || notice.runId !== runId) return '';
  if (notice.action === 'stop' && phase !== null && END_PHASES.has(phase)) {
    return endText(phase, canContinue);
  }
  return notice.text;
}
