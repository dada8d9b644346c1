/**
 * The wire contract between the Jupyter server extension (zeroshot_kernel/lab_server,
 * Python) and this front end. Every endpoint lives under `{baseUrl}zeroshot/api/` and is
 * authenticated by the Jupyter server (token/cookie + XSRF for POST). Every GET takes an
 * optional `?workspace=` (an absolute path inside the server's root dir; default: the root
 * dir itself). Errors are JSON `{error: string}` with a 4xx status; an unknown study adds
 * `studies: string[]` (the names that exist).
 *
 *   GET  studies                          -> StudiesReply
 *   GET  studies/{name}                   -> StudyDashboard
 *   GET  studies/{name}/candidates/{cid}  -> CandidateDetail
 *   GET  studies/{name}/export.csv        -> text/csv (the study's candidates; `?kind=rounds`: its rounds)
 *   GET  runs                             -> RunsReply
 *   GET  runs/{run_id}                    -> RunState
 *   POST runs/{run_id}/stop               -> ActionReply
 *   POST runs/{run_id}/continue           -> ActionReply (run_id: the new run)
 *
 * A cell's output names a run for the live monitor with the mime type
 * `application/vnd.zeroshot.run+json` and data `RunRef`.
 */

export const RUN_MIME = 'application/vnd.zeroshot.run+json';

export interface RunRef {
  run_id: string;
  /** The workspace (absolute path) whose ledger holds the run. */
  workspace: string;
}

export type Direction = 'minimize' | 'maximize';
export type Phase = 'admitted' | 'running' | 'stopping' | 'succeeded' | 'failed' | 'stopped';
export type Value = number | string | boolean | null;

export interface IncumbentRef {
  candidate_id: string;
  metric: number | null;
  round: number;
}

export interface StudyRow {
  name: string;
  task: string;
  metric: string;
  direction: Direction;
  /** Reviewed rounds (the baseline, round 0, is not counted), as `zeroshot research studies`. */
  rounds: number;
  adopted: number;
  incumbent: IncumbentRef | null;
  /** The study's newest run, and whether a controller is working on the study now. */
  latest_run: string | null;
  running: boolean;
  updated: string | null; // ISO 8601
}

export interface StudiesReply {
  workspace: string;
  studies: StudyRow[];
}

export interface RunRow {
  run_id: string;
  title: string;
  template: string | null; // "auto-research", "software-change", ... (null: a caller's own graph)
  study: string | null;
  phase: Phase;
  created: string | null;
  ended: string | null;
}

export interface RunsReply {
  workspace: string;
  runs: RunRow[]; // newest first
}

/** One reviewed round, in the plain words the widgets use. */
export interface RoundRow {
  round: number; // study-wide
  run_id: string;
  candidate_id: string;
  approach: string;
  strategy: string;
  params: Record<string, Value>;
  status: string; // the experiment's status: "ok", "crash", "timeout", "no metric", "pruned", ...
  metric: number | null;
  incumbent_id: string;
  incumbent_metric: number | null;
  best_so_far: number | null;
  adopted: boolean;
  /** "adopted", "kept the incumbent", "re-measured", ... */
  disposition: string;
  /** e.g. "kept the incumbent: the gain is within the noise" */
  decision: string;
  gain: number | null;
  noise_floor: number | null;
  seeds: number;
  gate_decision: string | null;
  effect_size: number | null;
}

/** One measured candidate: a row of the runs table (params and metrics are columns). */
export interface CandidateRow {
  candidate_id: string;
  round: number;
  run_id: string;
  params: Record<string, Value>;
  metric: number | null;
  status: string;
  adopted: boolean;
  harness: string | null;
  model: string | null;
  cost_usd: number | null;
  tokens: number | null;
  duration_s: number | null;
}

export interface ParamSpec {
  name: string;
  kind: 'float' | 'int' | 'categorical';
  low?: number;
  high?: number;
  log?: boolean;
  choices?: Value[];
}

export interface Importance {
  param: string;
  importance: number; // 0..1, summing to 1 over params
}

export interface ChartSeries {
  /** Study-wide round numbers, one per reviewed round, oldest first. */
  rounds: number[];
  values: (number | null)[]; // the round's candidate metric (null: failed / no metric)
  best_so_far: (number | null)[];
  adopted: boolean[];
  candidate_ids: string[];
  /** Rounds of the study before the run this chart is for (0 for a study's dashboard). */
  earlier: number;
}

export interface StudyDashboard {
  name: string;
  task: string;
  metric: string;
  direction: Direction;
  incumbent: IncumbentRef | null;
  chart: ChartSeries;
  rounds: RoundRow[]; // oldest first
  candidates: CandidateRow[];
  params: ParamSpec[];
  importance: Importance[];
  runs: string[];
  /** Plain-words observations (the insights view). */
  insights: string[];
}

export interface CurvePoint {
  step: number;
  value: number;
}

export interface CandidateDetail extends CandidateRow {
  approach: string;
  strategy: string;
  rationale: string;
  decision: string;
  review: string; // the reviewer's justification and reason
  evidence: string;
  diff: string;
  seeds: number;
  gain: number | null;
  noise_floor: number | null;
  gate_decision: string | null;
  curve: CurvePoint[];
}

export interface RunState {
  run_id: string;
  workspace: string;
  title: string;
  template: string | null;
  study: string | null;
  metric: string | null;
  direction: Direction | null;
  phase: Phase;
  is_research: boolean;
  /** Study-wide reviewed rounds shown, and the study-wide round count this run aims for. */
  rounds_done: number;
  rounds_total: number | null;
  round_in_progress: number | null;
  in_flight: string[];
  /** The same words as the widget's progress label, e.g. "12 / 50 rounds · round 13 in progress". */
  progress_text: string;
  incumbent: IncumbentRef | null;
  /** e.g. "3 rounds without an adoption since round 9", or "" */
  plateau_text: string;
  chart: ChartSeries;
  rounds: RoundRow[]; // oldest first, at most the newest 200
  cause: string | null; // why a failed run failed, in words
  log_tail: string;
  can_stop: boolean;
  can_continue: boolean;
  /** The run that continued this one's study (Continue pressed here or elsewhere). */
  continued_by: string | null;
}

export interface ActionReply {
  run_id: string;
  message: string;
}

export interface ErrorReply {
  error: string;
  studies?: string[];
}
