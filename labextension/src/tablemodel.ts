/**
 * The runs table's data (no DOM): its columns, how a row's cell is looked up by name (for the
 * filter language too), sorting, filtering and the column chooser's state.
 */

import { compile, ExpressionError } from './expression';
import type { CandidateRow, ParamSpec, Value } from './types';

export interface Column {
  /** The name the filter uses: `metric`, `cost_usd`, `params.lr`. */
  key: string;
  label: string;
  kind: 'number' | 'string' | 'boolean';
  /** Shown when the table first opens (a column no row has a value in starts hidden). */
  initial: boolean;
  /** No row has a value in it (the chooser says so; choosing it shows it anyway). */
  empty?: boolean;
  /** What the column holds, where its name does not say (the header's tooltip). */
  help?: string;
}

const USAGE_HELP =
  'what the harness reported for the model calls of the round that made and decided this candidate (from the ledger); empty where none was reported';

/** Columns shown even when empty: what identifies and measures a candidate. */
export const ALWAYS_SHOWN: ReadonlySet<string> = new Set(['candidate_id', 'round', 'metric', 'status']);

function isEmptyValue(v: Value | undefined): boolean {
  return v === null || v === undefined || v === '' || (typeof v === 'number' && Number.isNaN(v));
}

/** The candidate's own fields, in the order the table shows them. */
export const BASE_COLUMNS: Column[] = [
  { key: 'candidate_id', label: 'candidate', kind: 'string', initial: true },
  { key: 'round', label: 'round', kind: 'number', initial: true },
  { key: 'metric', label: 'metric', kind: 'number', initial: true },
  { key: 'status', label: 'status', kind: 'string', initial: true },
  { key: 'adopted', label: 'adopted', kind: 'boolean', initial: true },
  { key: 'harness', label: 'harness', kind: 'string', initial: true },
  { key: 'model', label: 'model', kind: 'string', initial: true },
  { key: 'cost_usd', label: 'cost_usd', kind: 'number', initial: true, help: `cost in USD: ${USAGE_HELP}` },
  { key: 'tokens', label: 'tokens', kind: 'number', initial: true, help: `input + output tokens: ${USAGE_HELP}` },
  { key: 'duration_s', label: 'duration_s', kind: 'number', initial: true },
  { key: 'run_id', label: 'run', kind: 'string', initial: false }
];

const BASE_KEYS = new Set(BASE_COLUMNS.map(c => c.key));

/** Other names the filter accepts for a candidate's own fields. */
const ALIASES: Record<string, string> = {
  candidate: 'candidate_id',
  id: 'candidate_id',
  cost: 'cost_usd',
  duration: 'duration_s',
  run: 'run_id'
};

function own<T extends object>(obj: T, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** The table's columns: the base fields, then one per parameter (spec order, then any other). */
export function columnsFor(rows: CandidateRow[], params: ParamSpec[] = []): Column[] {
  const names: string[] = [];
  const seen = new Set<string>();
  const add = (name: string) => {
    if (!seen.has(name)) {
      seen.add(name);
      names.push(name);
    }
  };
  params.forEach(p => add(p.name));
  rows.forEach(r => Object.keys(r.params ?? {}).forEach(add));
  const kindOf = (name: string): Column['kind'] => {
    const spec = params.find(p => p.name === name);
    if (spec) return spec.kind === 'categorical' ? 'string' : 'number';
    const v = rows.map(r => r.params?.[name]).find(x => x !== null && x !== undefined);
    return typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'string';
  };
  const all: Column[] = [
    ...BASE_COLUMNS,
    ...names.map(name => ({ key: `params.${name}`, label: name, kind: kindOf(name), initial: true }))
  ];
  if (!rows.length) return all.map(c => ({ ...c }));
  return all.map(c => {
    const empty = rows.every(r => isEmptyValue(cell(r, c.key)));
    return empty && !ALWAYS_SHOWN.has(c.key) ? { ...c, initial: false, empty: true } : { ...c };
  });
}

/**
 * A row's value for a column name: `params.NAME`, a base field (or its alias), or a parameter
 * named directly. undefined when the row has no such column; only own properties are read.
 */
export function cell(row: CandidateRow, name: string): Value | undefined {
  if (name.startsWith('params.')) {
    const p = name.slice('params.'.length);
    const params = row.params ?? {};
    return own(params, p) ? params[p] : undefined;
  }
  const base = own(ALIASES, name) ? ALIASES[name] : name;
  if (BASE_KEYS.has(base) && own(row, base)) {
    return (row as unknown as Record<string, Value>)[base];
  }
  const params = row.params ?? {};
  return own(params, name) ? params[name] : undefined;
}

export type SortDirection = 'asc' | 'desc';

export interface SortState {
  key: string;
  direction: SortDirection;
}

function typeRank(v: Value | undefined): number {
  if (typeof v === 'number') return Number.isNaN(v) ? 4 : 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  return 4; // null, missing: always last
}

/** Orders two values: numbers, then strings, then booleans; missing values last either way. */
export function compareCells(a: Value | undefined, b: Value | undefined, direction: SortDirection): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra === 4 || rb === 4) return ra - rb; // missing last regardless of direction
  const sign = direction === 'asc' ? 1 : -1;
  if (ra !== rb) return sign * (ra - rb);
  let c = 0;
  if (typeof a === 'number' && typeof b === 'number') c = a - b;
  else if (typeof a === 'string' && typeof b === 'string') c = a < b ? -1 : a > b ? 1 : 0;
  else if (typeof a === 'boolean' && typeof b === 'boolean') c = Number(a) - Number(b);
  return sign * c;
}

/** A sorted copy (stable: ties keep their order). */
export function sortRows(rows: CandidateRow[], sort: SortState | null): CandidateRow[] {
  const indexed = rows.map((row, i) => ({ row, i }));
  if (sort) {
    indexed.sort((x, y) => compareCells(cell(x.row, sort.key), cell(y.row, sort.key), sort.direction) || x.i - y.i);
  }
  return indexed.map(x => x.row);
}

/** A header click: a new column sorts ascending, the same column flips, a third click clears. */
export function nextSort(current: SortState | null, key: string): SortState | null {
  if (!current || current.key !== key) return { key, direction: 'asc' };
  if (current.direction === 'asc') return { key, direction: 'desc' };
  return null;
}

export interface FilterState {
  /** The text of the filter in force (the last one that parsed). */
  source: string;
  predicate: (row: CandidateRow) => boolean;
  /** The newest text's parse error; the filter in force stays the last good one. */
  error: string | null;
  errorPosition: number | null;
}

export const NO_FILTER: FilterState = { source: '', predicate: () => true, error: null, errorPosition: null };

/** Applies a newly typed filter text: a malformed one keeps the previous predicate. */
export function updateFilter(previous: FilterState, text: string): FilterState {
  try {
    const predicate = compile<CandidateRow>(text, cell);
    return { source: text, predicate, error: null, errorPosition: null };
  } catch (e) {
    if (e instanceof ExpressionError) {
      return { ...previous, error: e.message, errorPosition: e.position };
    }
    throw e;
  }
}

export function filterRows(rows: CandidateRow[], filter: FilterState): CandidateRow[] {
  return rows.filter(filter.predicate);
}

/** The keys shown, in column order: the chooser's choices, or each column's default. */
export function visibleColumns(columns: Column[], chosen: Map<string, boolean>): Column[] {
  return columns.filter(c => (chosen.has(c.key) ? chosen.get(c.key) === true : c.initial));
}

/** The table's rows as shown: filtered, then sorted. */
export function viewRows(rows: CandidateRow[], filter: FilterState, sort: SortState | null): CandidateRow[] {
  return sortRows(filterRows(rows, filter), sort);
}

/** A cell's text: numbers compactly, booleans as yes/no, missing as empty. */
export function formatCell(v: Value | undefined): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') return formatNumber(v);
  return v;
}

export function formatNumber(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '';
  if (Number.isInteger(v)) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}
