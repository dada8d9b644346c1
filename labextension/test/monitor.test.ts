import { describe, expect, it } from 'vitest';
import { compareFigure, relativeImprovement } from '../src/chartdata';
import {
  buttonStates,
  continuedText,
  followChain,
  followTarget,
  monitorFigure,
  newestRounds,
  shouldPoll
} from '../src/monitormodel';
import type { Phase } from '../src/types';
import { chart, runState } from './fixtures';

describe('chart traces', () => {
  it('draws earlier rounds apart and marks where this run starts', () => {
    const fig = monitorFigure(runState());
    const byName = Object.fromEntries(fig.data.map(t => [t.name as string, t]));
    expect(byName['earlier rounds'].x).toEqual([1, 2]); // round 3 failed: no point
    expect(byName['earlier rounds'].customdata).toEqual(['c1', 'c2']);
    expect(byName['adopted'].x).toEqual([4, 5]);
    expect(byName['best so far'].x).toEqual([1, 2, 3, 4, 5]);
    const shapes = fig.layout.shapes as { x0: number }[];
    expect(shapes).toHaveLength(1);
    expect(shapes[0].x0).toBe(3.5);
    expect(String((byName['adopted'].hovertext as string[])[0])).toContain('x=4');
  });
  it('has no earlier trace or mark for a run that starts its study', () => {
    const fig = monitorFigure(runState({ chart: chart({ earlier: 0 }) }));
    expect(fig.data.map(t => t.name)).not.toContain('earlier rounds');
    expect(fig.layout.shapes).toEqual([]);
  });
  it('escapes server text in hover labels', () => {
    const fig = monitorFigure(runState({ chart: chart({ candidate_ids: ['<b>x</b>', 'c2', 'c3', 'c4', 'c5'] }) }));
    const hover = fig.data.flatMap(t => (t.hovertext as string[] | undefined) ?? []).join('\n');
    expect(hover).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(hover).not.toContain('<b>x');
  });
});

describe('buttons per phase', () => {
  const cases: [Phase, boolean][] = [
    ['admitted', false],
    ['running', false],
    ['stopping', true],
    ['succeeded', true],
    ['failed', true],
    ['stopped', true]
  ];
  for (const [phase, stopDisabled] of cases) {
    it(`${phase}: stop ${stopDisabled ? 'disabled' : 'enabled'}, always visible`, () => {
      const b = buttonStates(runState({ phase, can_stop: phase === 'running' || phase === 'admitted' }));
      expect(b.stop.visible).toBe(true);
      expect(b.stop.disabled).toBe(stopDisabled);
    });
  }
  it('shows Continue only when the server offers it', () => {
    expect(buttonStates(runState({ phase: 'succeeded', can_continue: false })).continue.visible).toBe(false);
    expect(buttonStates(runState({ phase: 'succeeded', can_continue: true })).continue.visible).toBe(true);
    expect(buttonStates(runState({ phase: 'succeeded', can_continue: true, continued_by: 'r2' })).continue.visible).toBe(false);
    expect(buttonStates(runState({ phase: 'succeeded', can_continue: true }), 'continue').continue.disabled).toBe(true);
  });
  it('disables Stop while a stop is pending', () => {
    expect(buttonStates(runState(), 'stop').stop.disabled).toBe(true);
  });
});

describe('polling and following', () => {
  it('polls while live or while Continue is on offer', () => {
    expect(shouldPoll(null)).toBe(true);
    expect(shouldPoll(runState({ phase: 'running' }))).toBe(true);
    expect(shouldPoll(runState({ phase: 'stopping' }))).toBe(true);
    expect(shouldPoll(runState({ phase: 'succeeded' }))).toBe(false);
    expect(shouldPoll(runState({ phase: 'succeeded', can_continue: true }))).toBe(true);
    expect(shouldPoll(runState({ phase: 'failed' }))).toBe(false);
  });
  it('follows continued_by', () => {
    expect(followTarget(runState({ continued_by: null }))).toBe('run-b');
    expect(followTarget(runState({ continued_by: 'run-c' }))).toBe('run-c');
    expect(followTarget(runState({ continued_by: 'run-b' }))).toBe('run-b');
    const links: Record<string, string> = { a: 'b', b: 'c', c: 'a' };
    expect(followChain('a', id => links[id] ?? null)).toEqual({ runId: 'c', via: ['a', 'b'] });
    expect(continuedText(['a', 'b'], 'c')).toBe('b continued as c');
    expect(continuedText([], 'c')).toBe('');
  });
  it('lists the newest rounds first', () => {
    expect(newestRounds(runState().rounds, 3).map(r => r.round)).toEqual([5, 4, 3]);
  });
});

describe('compare', () => {
  const a = { name: 'a', task: 'rosenbrock', metric: 'loss', direction: 'minimize' as const, chart: chart() };
  it('overlays raw values for the same metric', () => {
    const { figure, warning } = compareFigure([a, { ...a, name: 'b' }]);
    expect(warning).toBeNull();
    expect(figure.data[0].y).toEqual([5, 4, 4, 3.5, 2]);
  });
  it('plots relative to each start and warns for different metrics', () => {
    const b = { name: 'b', task: 'svc', metric: 'accuracy', direction: 'maximize' as const, chart: chart({ best_so_far: [0.5, 0.6, 0.6, 0.75, 0.75] }) };
    const { figure, warning } = compareFigure([a, b]);
    expect(warning).toMatch(/not drawn on one metric axis/);
    expect(figure.data[0].y).toEqual([0, 20, 20, 30, 60]);
    expect((figure.data[1].y as number[]).map(v => Math.round(v))).toEqual([0, 20, 20, 50, 50]);
    expect(relativeImprovement([0, -1], 'minimize')).toEqual({ absolute: true, values: [0, 1] });
  });
});
