import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bestSoFarFigure, compareFigure, yAxisFor } from '../src/chartdata';
import { monitorFigure } from '../src/monitormodel';
import { columnsFor, visibleColumns } from '../src/tablemodel';
import type { Phase } from '../src/types';
import { endText, gateWords, incumbentText, noticeText, phaseTitle, phaseWord } from '../src/words';
import { candidate, chart, runState } from './fixtures';

describe('phase words', () => {
  it('say what `zeroshot status` and the widgets say', () => {
    const phases: Phase[] = ['admitted', 'running', 'stopping', 'succeeded', 'failed', 'stopped'];
    expect(phases.map(phaseWord)).toEqual(phases);
    expect(phaseWord('succeeded')).not.toBe('finished');
    expect(phaseTitle('admitted')).toMatch(/waiting for its controller/);
  });
  it('give admitted its own neutral colour, not running green', () => {
    const css = readFileSync(new URL('../style/index.css', import.meta.url), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    const rules = css.split('}').map(rule => rule.split('{') as [string, string | undefined]);
    const colourOf = (selector: string) =>
      rules
        .filter(([sel, body]) => body !== undefined && sel.split(',').some(s => s.trim() === selector))
        .map(([, body]) => /(?:^|;|\s)color:\s*([^;]+)/.exec(body ?? '')?.[1]?.trim())
        .filter(Boolean);
    for (const badge of ['.zs-monitor-phase', '.zs-run-phase']) {
      const running = colourOf(`${badge}[data-phase='running']`);
      const admitted = colourOf(`${badge}[data-phase='admitted']`);
      expect(running).toEqual(['var(--jp-success-color1)']);
      expect(admitted.length).toBe(1);
      expect(admitted[0]).not.toMatch(/success/);
    }
  });
});

describe('the monitor message after Stop', () => {
  const asked = { action: 'stop' as const, runId: 'run-b', text: "stop requested; the run's controller is closing it" };
  it('says the request while the run is live', () => {
    expect(noticeText(asked, 'run-b', 'running')).toBe(asked.text);
    expect(noticeText(asked, 'run-b', 'stopping')).toBe(asked.text);
    expect(noticeText(asked, 'run-b', null)).toBe(asked.text);
  });
  it('says the end state once the run has ended, never the request', () => {
    for (const phase of ['stopped', 'succeeded', 'failed'] as Phase[]) {
      const text = noticeText(asked, 'run-b', phase);
      expect(text).not.toMatch(/requested/);
      expect(text).toBe(endText(phase));
      expect(text).toContain(phase);
    }
    expect(noticeText(asked, 'run-b', 'stopped', true)).toMatch(/^the run has stopped; Continue/);
  });
  it('says nothing about another run, and keeps other notices', () => {
    expect(noticeText(asked, 'run-c', 'running')).toBe('');
    expect(noticeText(null, 'run-b', 'stopped')).toBe('');
    const cont = { action: 'continue' as const, runId: 'run-c', text: 'continued as run-c' };
    expect(noticeText(cont, 'run-c', 'succeeded')).toBe('continued as run-c');
  });
});

describe('a study row in the panel', () => {
  it('says its value is the incumbent metric', () => {
    expect(incumbentText('rosenbrock', { candidate_id: 'c004', metric: 23.3195, round: 4 })).toBe('incumbent rosenbrock = 23.32');
    expect(incumbentText('rosenbrock', null)).toBe('no incumbent yet (rosenbrock)');
  });
  it('says a gate decision in words', () => {
    expect(gateWords('budget_spent')).not.toContain('_');
    expect(gateWords('not_better')).toBe('no better on average');
    expect(gateWords(null)).toBe('not raced');
    expect(gateWords('some_new_key')).toBe('some new key');
  });
});

describe('the best-so-far y axis', () => {
  it('is logarithmic when every value is positive and they span more than two decades', () => {
    const huge = chart({ values: [4000, 30, 5, 2.5, 2], best_so_far: [4000, 30, 5, 2.5, 2] });
    const axis = bestSoFarFigure(huge, { metric: 'rosenbrock' }).layout.yaxis as { type: string; title: { text: string } };
    expect(axis.type).toBe('log');
    expect(axis.title.text).toBe('rosenbrock (log scale)');
    expect((monitorFigure(runState({ chart: huge })).layout.yaxis as { type: string }).type).toBe('log');
  });
  it('is linear for values within two decades, and for any zero or negative value', () => {
    const axis = (values: (number | null)[]) => yAxisFor(values, 'loss');
    expect(axis([5, 4, null, 3.5, 2])).toEqual({ type: 'linear', title: 'loss' });
    expect(axis([99, 1]).type).toBe('linear');
    expect(axis([101, 1]).type).toBe('log');
    expect(axis([4000, 0, 2]).type).toBe('linear');
    expect(axis([4000, -1, 2]).type).toBe('linear');
    expect(axis([null, 5000]).type).toBe('linear'); // one value: nothing to squash
    const fig = bestSoFarFigure(chart(), { metric: 'loss' });
    expect(fig.layout.yaxis).toEqual({ title: { text: 'loss' }, type: 'linear' });
  });
  it('counts the best-so-far line as plotted too', () => {
    expect(yAxisFor([...[5, 4], ...[1000, 4]], 'm').type).toBe('log');
  });
  it('applies to the compare overlay of one metric', () => {
    const a = { name: 'a', task: 't', metric: 'loss', direction: 'minimize' as const, chart: chart({ best_so_far: [5000, 40, 4, 3, 2] }) };
    const { figure } = compareFigure([a, { ...a, name: 'b' }]);
    expect((figure.layout.yaxis as { type: string }).type).toBe('log');
  });
});

describe('empty columns of the runs table', () => {
  const rows = [
    candidate({ candidate_id: 'a', metric: 1, tokens: 120, params: { x: 1 } }),
    candidate({ candidate_id: 'b', metric: 2, tokens: null, params: { x: 2 } })
  ];
  it('are hidden by default, and can be chosen', () => {
    const cols = columnsFor(rows);
    const shown = visibleColumns(cols, new Map()).map(c => c.key);
    expect(shown).toContain('tokens'); // one row has tokens
    for (const key of ['cost_usd', 'duration_s', 'harness', 'model']) {
      expect(shown).not.toContain(key);
      expect(cols.find(c => c.key === key)?.empty).toBe(true);
    }
    expect(cols.find(c => c.key === 'tokens')?.empty).toBeUndefined();
    const chosen = new Map([['cost_usd', true]]);
    expect(visibleColumns(cols, chosen).map(c => c.key)).toContain('cost_usd');
  });
  it('never hide what identifies and measures a candidate', () => {
    const failed = [candidate({ candidate_id: 'a', metric: null }), candidate({ candidate_id: 'b', metric: null })];
    const shown = visibleColumns(columnsFor(failed), new Map()).map(c => c.key);
    expect(shown).toEqual(expect.arrayContaining(['candidate_id', 'round', 'metric', 'status']));
  });
  it('keep every default while there are no rows', () => {
    expect(visibleColumns(columnsFor([]), new Map()).map(c => c.key)).toContain('cost_usd');
  });
  it('explain what cost and tokens count', () => {
    expect(columnsFor(rows).find(c => c.key === 'tokens')?.help).toMatch(/round that made and decided/);
  });
});
