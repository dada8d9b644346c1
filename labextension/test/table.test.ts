import { describe, expect, it } from 'vitest';
import {
  cell,
  columnsFor,
  formatCell,
  NO_FILTER,
  nextSort,
  sortRows,
  updateFilter,
  viewRows,
  visibleColumns
} from '../src/tablemodel';
import { candidate } from './fixtures';

const rows = [
  candidate({ candidate_id: 'a', round: 1, metric: 0.9, params: { lr: 0.01, opt: 'adam' }, harness: 'openai', cost_usd: 0.2 }),
  candidate({ candidate_id: 'b', round: 2, metric: 0.3, params: { lr: 0.0005, opt: 'sgd' }, harness: 'openai', adopted: true }),
  candidate({ candidate_id: 'c', round: 3, metric: null, status: 'crash', params: { lr: 0.002, opt: 'adam' }, harness: 'local' }),
  candidate({ candidate_id: 'd', round: 4, metric: 0.4, params: { lr: 0.001 }, harness: 'local', adopted: true })
];
const ids = (rs: { candidate_id: string }[]) => rs.map(r => r.candidate_id);

describe('columns', () => {
  it('adds one column per parameter after the base fields', () => {
    const cols = columnsFor(rows, [{ name: 'lr', kind: 'float', low: 1e-4, high: 1, log: true }]);
    const keys = cols.map(c => c.key);
    expect(keys.slice(0, 3)).toEqual(['candidate_id', 'round', 'metric']);
    expect(keys.slice(-2)).toEqual(['params.lr', 'params.opt']);
    expect(cols.find(c => c.key === 'params.lr')?.kind).toBe('number');
    expect(cols.find(c => c.key === 'params.opt')?.kind).toBe('string');
  });
  it('shows the defaults until the chooser says otherwise', () => {
    const cols = columnsFor(rows);
    const chosen = new Map<string, boolean>();
    expect(visibleColumns(cols, chosen).some(c => c.key === 'run_id')).toBe(false);
    chosen.set('run_id', true);
    chosen.set('metric', false);
    const keys = visibleColumns(cols, chosen).map(c => c.key);
    expect(keys).toContain('run_id');
    expect(keys).not.toContain('metric');
    expect(keys.indexOf('run_id')).toBeGreaterThan(keys.indexOf('round'));
  });
});

describe('cells', () => {
  it('reads params directly, as params.NAME, and aliases', () => {
    expect(cell(rows[0], 'lr')).toBe(0.01);
    expect(cell(rows[0], 'params.lr')).toBe(0.01);
    expect(cell(rows[0], 'cost')).toBe(0.2);
    expect(cell(rows[3], 'params.opt')).toBeUndefined();
  });
  it('reads own fields only', () => {
    expect(cell(rows[0], 'constructor')).toBeUndefined();
    expect(cell(rows[0], 'params.__proto__')).toBeUndefined();
    expect(cell(rows[0], 'toString')).toBeUndefined();
  });
  it('formats', () => {
    expect(formatCell(true)).toBe('yes');
    expect(formatCell(null)).toBe('');
    expect(formatCell(0.00012345)).toBe('1.234e-4');
    expect(formatCell(0.123456789)).toBe('0.12346');
  });
});

describe('sort', () => {
  it('sorts ascending, descending, and keeps missing values last', () => {
    expect(ids(sortRows(rows, { key: 'metric', direction: 'asc' }))).toEqual(['b', 'd', 'a', 'c']);
    expect(ids(sortRows(rows, { key: 'metric', direction: 'desc' }))).toEqual(['a', 'd', 'b', 'c']);
    expect(ids(sortRows(rows, { key: 'opt', direction: 'asc' }))).toEqual(['a', 'c', 'b', 'd']);
    expect(ids(sortRows(rows, { key: 'harness', direction: 'desc' }))).toEqual(['a', 'b', 'c', 'd']);
  });
  it('cycles asc, desc, none on header clicks', () => {
    let s = nextSort(null, 'metric');
    expect(s).toEqual({ key: 'metric', direction: 'asc' });
    s = nextSort(s, 'metric');
    expect(s).toEqual({ key: 'metric', direction: 'desc' });
    expect(nextSort(s, 'metric')).toBeNull();
    expect(nextSort(s, 'lr')).toEqual({ key: 'lr', direction: 'asc' });
  });
});

describe('filter', () => {
  it('filters with the expression language', () => {
    const f = updateFilter(NO_FILTER, 'metric < 0.5 and harness == "openai"');
    expect(ids(viewRows(rows, f, null))).toEqual(['b']);
    expect(ids(viewRows(rows, updateFilter(NO_FILTER, 'lr >= 1e-3 or not adopted'), null))).toEqual(['a', 'c', 'd']);
    expect(ids(viewRows(rows, updateFilter(NO_FILTER, 'status != "ok"'), null))).toEqual(['c']);
    expect(ids(viewRows(rows, updateFilter(NO_FILTER, '(params.opt == "adam" or adopted) and metric != null'), { key: 'metric', direction: 'asc' }))).toEqual(['b', 'd', 'a']);
  });
  it('keeps the last good filter when the new text does not parse', () => {
    const good = updateFilter(NO_FILTER, 'adopted');
    const bad = updateFilter(good, 'adopted and (');
    expect(bad.error).toMatch(/position/);
    expect(bad.errorPosition).toBe(13);
    expect(bad.source).toBe('adopted');
    expect(ids(viewRows(rows, bad, null))).toEqual(['b', 'd']);
    const fixed = updateFilter(bad, 'not adopted');
    expect(fixed.error).toBeNull();
    expect(ids(viewRows(rows, fixed, null))).toEqual(['a', 'c']);
  });
  it('passes every row when empty', () => {
    expect(viewRows(rows, updateFilter(NO_FILTER, ''), null)).toHaveLength(4);
  });
});
