/**
 * Plotly figures as plain data (no DOM, no Plotly import): the best-so-far chart (every
 * candidate's point, the best-so-far line, earlier rounds drawn apart from this run's), the
 * parallel coordinates, slices, importance bars, the contour and the compare overlay.
 */

import { formatCell, formatNumber } from './tablemodel';
import type { CandidateRow, ChartSeries, Direction, Importance, ParamSpec, Value } from './types';

/** Plotly's trace and layout objects, loosely: this module builds them as JSON-like data. */
export type Trace = Record<string, unknown>;
export type Layout = Record<string, unknown>;

export interface Figure {
  data: Trace[];
  layout: Layout;
}

export function paramsText(params: Record<string, Value> | undefined): string {
  if (!params) return '';
  return Object.keys(params)
    .map(k => `${k}=${formatCell(params[k])}`)
    .join('<br>');
}

/** Escapes text shown in Plotly's hover labels (which read a little HTML). */
export function plotlyText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** More than this ratio between the largest and smallest plotted value: a log axis. */
export const LOG_AXIS_SPAN = 100;

export interface YAxisChoice {
  type: 'log' | 'linear';
  title: string;
}

/**
 * The y axis of a chart of `values`: logarithmic when every plotted (finite) value is
 * positive and they span more than two decades (a huge first candidate would squash the
 * rest on a linear axis), said in the title; linear otherwise.
 */
export function yAxisFor(values: (number | null | undefined)[], metric: string): YAxisChoice {
  const plotted = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (plotted.length >= 2 && plotted.every(v => v > 0)) {
    const low = Math.min(...plotted);
    const high = Math.max(...plotted);
    if (high / low > LOG_AXIS_SPAN) return { type: 'log', title: `${metric} (log scale)` };
  }
  return { type: 'linear', title: metric };
}

export interface BestChartOptions {
  metric: string;
  /** Per round, the candidate's params (hover text), by candidate id. */
  params?: Map<string, Record<string, Value>>;
  /** Mark where this run starts (a run's monitor); 0 or less: no mark. */
  runStartsAfter?: number;
}

/**
 * The best-so-far chart: candidates as points (adopted ones filled), the best-so-far as a
 * step line; with `earlier` rounds (a run's monitor), those rounds' points are grey and a
 * dotted line marks where this run starts.
 */
export function bestSoFarFigure(chart: ChartSeries, options: BestChartOptions): Figure {
  const earlier = Math.max(0, chart.earlier ?? 0);
  const params = options.params ?? new Map<string, Record<string, Value>>();
  const rounds = chart.rounds ?? [];
  const hover = rounds.map((r, i) => {
    const cid = chart.candidate_ids[i] ?? '';
    const value = chart.values[i];
    const lines = [
      `round ${r} · ${plotlyText(cid)}`,
      `${plotlyText(options.metric)}: ${value === null || value === undefined ? 'no metric' : formatNumber(value)}`,
      chart.adopted[i] ? 'adopted' : 'not adopted'
    ];
    const p = paramsText(params.get(cid));
    if (p) lines.push(plotlyText(p).replace(/&lt;br&gt;/g, '<br>'));
    return lines.join('<br>');
  });
  const split = (pick: (i: number) => boolean) => {
    const idx = rounds.map((_, i) => i).filter(i => pick(i) && chart.values[i] !== null && chart.values[i] !== undefined);
    return {
      x: idx.map(i => rounds[i]),
      y: idx.map(i => chart.values[i]),
      customdata: idx.map(i => chart.candidate_ids[i]),
      hovertext: idx.map(i => hover[i])
    };
  };
  const data: Trace[] = [];
  const isEarlier = (i: number) => earlier > 0 && rounds[i] <= earlier;
  if (earlier > 0) {
    const e = split(isEarlier);
    data.push({
      type: 'scatter',
      mode: 'markers',
      name: 'earlier rounds',
      ...e,
      hoverinfo: 'text',
      marker: { color: 'rgba(140,140,140,0.6)', size: 7 }
    });
  }
  const mine = (i: number) => !isEarlier(i);
  const tried = split(i => mine(i) && !chart.adopted[i]);
  const adopted = split(i => mine(i) && chart.adopted[i]);
  data.push({
    type: 'scatter',
    mode: 'markers',
    name: 'candidates',
    ...tried,
    hoverinfo: 'text',
    marker: { color: 'rgba(31,119,180,0.35)', size: 8, line: { color: '#1f77b4', width: 1 } }
  });
  data.push({
    type: 'scatter',
    mode: 'markers',
    name: 'adopted',
    ...adopted,
    hoverinfo: 'text',
    marker: { color: '#2ca02c', size: 10, symbol: 'diamond' }
  });
  const best = rounds.map((r, i) => ({ r, v: chart.best_so_far[i] })).filter(p => p.v !== null && p.v !== undefined);
  data.push({
    type: 'scatter',
    mode: 'lines',
    name: 'best so far',
    x: best.map(p => p.r),
    y: best.map(p => p.v),
    line: { shape: 'hv', color: '#d62728', width: 2 },
    hoverinfo: 'skip'
  });
  const failed = rounds.filter((_, i) => chart.values[i] === null || chart.values[i] === undefined);
  const yAxis = yAxisFor([...chart.values, ...chart.best_so_far], options.metric);
  const shapes: unknown[] = [];
  const annotations: unknown[] = [];
  const start = options.runStartsAfter ?? earlier;
  if (start > 0) {
    shapes.push({
      type: 'line',
      xref: 'x',
      yref: 'paper',
      x0: start + 0.5,
      x1: start + 0.5,
      y0: 0,
      y1: 1,
      line: { dash: 'dot', color: '#888', width: 1 }
    });
    annotations.push({
      x: start + 0.5,
      y: 1,
      xref: 'x',
      yref: 'paper',
      text: 'this run starts',
      showarrow: false,
      xanchor: 'left',
      yanchor: 'bottom',
      font: { size: 10 }
    });
  }
  return {
    data,
    layout: {
      // whole rounds only (no 1.5 ticks), about ten of them
      xaxis: { title: { text: 'round' }, zeroline: false, dtick: Math.max(1, Math.ceil(rounds.length / 10)) },
      yaxis: { title: { text: yAxis.title }, type: yAxis.type },
      hovermode: 'closest',
      margin: { l: 60, r: 20, t: 30, b: 45 },
      legend: { orientation: 'h', y: -0.25 },
      shapes,
      annotations,
      meta: { failedRounds: failed.length }
    }
  };
}

function numericParams(params: ParamSpec[], rows: CandidateRow[]): string[] {
  const names = params.length ? params.map(p => p.name) : Array.from(new Set(rows.flatMap(r => Object.keys(r.params ?? {}))));
  return names.filter(n => {
    const spec = params.find(p => p.name === n);
    if (spec) return spec.kind !== 'categorical';
    return rows.some(r => typeof r.params?.[n] === 'number');
  });
}

function categoricalParams(params: ParamSpec[], rows: CandidateRow[]): string[] {
  const names = params.length ? params.map(p => p.name) : Array.from(new Set(rows.flatMap(r => Object.keys(r.params ?? {}))));
  return names.filter(n => !numericParams(params, rows).includes(n));
}

function measured(rows: CandidateRow[]): CandidateRow[] {
  return rows.filter(r => typeof r.metric === 'number' && Number.isFinite(r.metric));
}

/** Parallel coordinates: one axis per parameter and one for the metric (brush any axis). */
export function parcoordsFigure(rows: CandidateRow[], params: ParamSpec[], metric: string, direction: Direction): Figure | null {
  const ok = measured(rows);
  if (ok.length < 2) return null;
  const dims: Trace[] = [];
  for (const name of numericParams(params, ok)) {
    const spec = params.find(p => p.name === name);
    const values = ok.map(r => {
      const v = r.params?.[name];
      return typeof v === 'number' ? (spec?.log && v > 0 ? Math.log10(v) : v) : NaN;
    });
    dims.push({ label: spec?.log ? `log10 ${name}` : name, values });
  }
  for (const name of categoricalParams(params, ok)) {
    const levels = Array.from(new Set(ok.map(r => formatCell(r.params?.[name]))));
    dims.push({
      label: name,
      values: ok.map(r => levels.indexOf(formatCell(r.params?.[name]))),
      tickvals: levels.map((_, i) => i),
      ticktext: levels
    });
  }
  const metricValues = ok.map(r => r.metric as number);
  dims.push({ label: metric, values: metricValues });
  return {
    data: [
      {
        type: 'parcoords',
        dimensions: dims,
        line: {
          color: metricValues,
          colorscale: 'Viridis',
          reversescale: direction === 'minimize',
          showscale: true,
          colorbar: { title: { text: metric } }
        }
      }
    ],
    layout: { margin: { l: 60, r: 60, t: 40, b: 30 } }
  };
}

/** One slice per parameter: the metric against the parameter's value. */
export function sliceFigures(rows: CandidateRow[], params: ParamSpec[], metric: string): { param: string; figure: Figure }[] {
  const ok = measured(rows);
  const names = params.length ? params.map(p => p.name) : Array.from(new Set(ok.flatMap(r => Object.keys(r.params ?? {}))));
  return names.map(name => {
    const spec = params.find(p => p.name === name);
    const points = ok.filter(r => r.params?.[name] !== undefined && r.params?.[name] !== null);
    return {
      param: name,
      figure: {
        data: [
          {
            type: 'scatter',
            mode: 'markers',
            x: points.map(r => r.params[name]),
            y: points.map(r => r.metric),
            customdata: points.map(r => r.candidate_id),
            hovertext: points.map(r => `${plotlyText(r.candidate_id)}<br>${plotlyText(name)}=${plotlyText(formatCell(r.params[name]))}<br>${plotlyText(metric)}: ${formatNumber(r.metric)}`),
            hoverinfo: 'text',
            marker: { size: 7, color: points.map(r => r.round), colorscale: 'Blues', showscale: false }
          }
        ],
        layout: {
          xaxis: { title: { text: name }, type: spec?.log ? 'log' : spec?.kind === 'categorical' ? 'category' : '-' },
          yaxis: { title: { text: metric } },
          margin: { l: 55, r: 10, t: 10, b: 45 },
          hovermode: 'closest',
          showlegend: false
        }
      }
    };
  });
}

export function importanceFigure(importance: Importance[]): Figure | null {
  if (!importance.length) return null;
  const sorted = [...importance].sort((a, b) => a.importance - b.importance);
  return {
    data: [
      {
        type: 'bar',
        orientation: 'h',
        x: sorted.map(i => i.importance),
        y: sorted.map(i => i.param),
        hovertemplate: '%{y}: %{x:.2f}<extra></extra>',
        marker: { color: '#1f77b4' }
      }
    ],
    layout: {
      xaxis: { title: { text: 'importance' }, range: [0, 1] },
      margin: { l: 110, r: 10, t: 10, b: 45 },
      height: Math.max(160, 40 + 30 * sorted.length)
    }
  };
}

/** The two numeric parameters a contour shows: the most important ones, else the first two. */
export function contourParams(params: ParamSpec[], importance: Importance[], rows: CandidateRow[]): [string, string] | null {
  const numeric = numericParams(params, rows);
  if (numeric.length < 2) return null;
  const rank = (n: string) => importance.find(i => i.param === n)?.importance ?? -1;
  const ordered = [...numeric].sort((a, b) => rank(b) - rank(a));
  return [ordered[0], ordered[1]];
}

export function contourFigure(rows: CandidateRow[], x: string, y: string, params: ParamSpec[], metric: string): Figure | null {
  const ok = measured(rows).filter(r => typeof r.params?.[x] === 'number' && typeof r.params?.[y] === 'number');
  if (ok.length < 3) return null;
  const xs = ok.map(r => r.params[x] as number);
  const ys = ok.map(r => r.params[y] as number);
  const zs = ok.map(r => r.metric as number);
  const sx = params.find(p => p.name === x);
  const sy = params.find(p => p.name === y);
  return {
    data: [
      {
        type: 'contour',
        x: xs,
        y: ys,
        z: zs,
        colorscale: 'Viridis',
        contours: { coloring: 'heatmap' },
        connectgaps: true,
        colorbar: { title: { text: metric } },
        hoverinfo: 'skip'
      },
      {
        type: 'scatter',
        mode: 'markers',
        x: xs,
        y: ys,
        customdata: ok.map(r => r.candidate_id),
        hovertext: ok.map(r => `${plotlyText(r.candidate_id)}<br>${plotlyText(metric)}: ${formatNumber(r.metric)}`),
        hoverinfo: 'text',
        marker: { color: 'white', size: 6, line: { color: 'black', width: 1 } },
        showlegend: false
      }
    ],
    layout: {
      xaxis: { title: { text: x }, type: sx?.log ? 'log' : '-' },
      yaxis: { title: { text: y }, type: sy?.log ? 'log' : '-' },
      margin: { l: 60, r: 10, t: 10, b: 45 },
      hovermode: 'closest'
    }
  };
}

export interface CompareStudy {
  name: string;
  task: string;
  metric: string;
  direction: Direction;
  chart: ChartSeries;
}

/** Same task, metric and direction: one raw axis is honest; otherwise it is not. */
export function comparable(studies: CompareStudy[]): boolean {
  if (studies.length < 2) return true;
  const [first] = studies;
  return studies.every(s => s.metric === first.metric && s.direction === first.direction && s.task === first.task);
}

/**
 * A study's best-so-far relative to its own start, as an improvement in percent (positive is
 * better for either direction); null where there is no value. A start of 0 gives absolute
 * improvements instead (the caller says so).
 */
export function relativeImprovement(best: (number | null)[], direction: Direction): { values: (number | null)[]; absolute: boolean } {
  const start = best.find(v => v !== null && v !== undefined && Number.isFinite(v));
  if (start === undefined || start === null) return { values: best.map(() => null), absolute: false };
  const sign = direction === 'minimize' ? -1 : 1;
  const absolute = start === 0;
  return {
    absolute,
    values: best.map(v => {
      if (v === null || v === undefined || !Number.isFinite(v)) return null;
      const gain = sign * (v - start) + 0; // + 0: no -0
      return absolute ? gain : (100 * gain) / Math.abs(start);
    })
  };
}

/** The compare chart: raw best-so-far overlaid, or each study relative to its start, with a warning. */
export function compareFigure(studies: CompareStudy[]): { figure: Figure; warning: string | null } {
  const same = comparable(studies);
  let anyAbsolute = false;
  const data: Trace[] = studies.map(s => {
    let y: (number | null)[] = s.chart.best_so_far;
    if (!same) {
      const rel = relativeImprovement(s.chart.best_so_far, s.direction);
      anyAbsolute = anyAbsolute || rel.absolute;
      y = rel.values;
    }
    return {
      type: 'scatter',
      mode: 'lines+markers',
      name: same ? s.name : `${s.name} (${s.metric}, ${s.direction})`,
      x: s.chart.rounds,
      y,
      line: { shape: 'hv' }
    };
  });
  const first = studies[0];
  const warning = same
    ? null
    : `These studies measure different things (${studies
        .map(s => `${s.name}: ${s.task} · ${s.metric}, ${s.direction}`)
        .join('; ')}), so they are not drawn on one metric axis: each line is its best-so-far's improvement relative to its own start${anyAbsolute ? ' (a study starting at 0 shows the absolute improvement)' : ''} (higher is better).`;
  return {
    figure: {
      data,
      layout: {
        xaxis: { title: { text: 'round' } },
        yaxis: same
          ? (() => {
              const axis = yAxisFor(studies.flatMap(s => s.chart.best_so_far), first?.metric ?? '');
              return { title: { text: axis.title }, type: axis.type };
            })()
          : { title: { text: 'improvement from start (%)' } },
        margin: { l: 60, r: 10, t: 10, b: 45 },
        hovermode: 'closest',
        legend: { orientation: 'h', y: -0.25 }
      }
    },
    warning
  };
}
