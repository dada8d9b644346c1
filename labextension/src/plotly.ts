/**
 * Plotly, loaded on first use (a separate chunk: the extension's startup stays small), and
 * drawn in the current theme's colours.
 */

import type { Figure } from './chartdata';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PlotlyModule = any;

let loading: Promise<PlotlyModule> | null = null;

export function loadPlotly(): Promise<PlotlyModule> {
  if (!loading) {
    loading = import(/* webpackChunkName: "plotly" */ 'plotly.js-dist-min').then(m => (m as { default?: unknown }).default ?? m);
  }
  return loading;
}

function cssVar(node: HTMLElement, name: string, fallback: string): string {
  const v = getComputedStyle(node).getPropertyValue(name).trim();
  return v || fallback;
}

/** Plotly layout defaults that follow the JupyterLab theme (dark themes included). */
export function themeLayout(node: HTMLElement): Record<string, unknown> {
  const fg = cssVar(node, '--jp-ui-font-color1', '#333');
  const grid = cssVar(node, '--jp-border-color2', '#ddd');
  return {
    paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)',
    font: { color: fg, size: 11 },
    xaxis: { gridcolor: grid, linecolor: grid },
    yaxis: { gridcolor: grid, linecolor: grid },
    autosize: true
  };
}

function mergeAxis(base: unknown, own: unknown): unknown {
  if (typeof own !== 'object' || own === null) return base;
  return { ...(base as object), ...(own as object) };
}

export interface PlotHandlers {
  /** A point was clicked: its customdata (a candidate id) when it has one. */
  onClick?: (candidateId: string) => void;
}

/** Draws (or redraws in place) a figure into a node. */
export async function plot(node: HTMLElement, figure: Figure, handlers: PlotHandlers = {}): Promise<void> {
  const Plotly = await loadPlotly();
  const theme = themeLayout(node);
  const layout = {
    ...theme,
    ...figure.layout,
    xaxis: mergeAxis(theme.xaxis, figure.layout.xaxis),
    yaxis: mergeAxis(theme.yaxis, figure.layout.yaxis),
    // keeps the user's zoom, pan and brushing across redraws of new data
    uirevision: 'zeroshot'
  };
  const hadPlot = (node as unknown as { _fullLayout?: unknown })._fullLayout !== undefined;
  if (!hadPlot) {
    // a placeholder's text goes before the first plot
    while (node.firstChild) node.removeChild(node.firstChild);
  }
  await Plotly.react(node, figure.data, layout, { responsive: true, displaylogo: false });
  if (!hadPlot && handlers.onClick) {
    const onClick = handlers.onClick;
    (node as unknown as { on: (e: string, f: (ev: unknown) => void) => void }).on('plotly_click', (ev: unknown) => {
      const points = (ev as { points?: { customdata?: unknown }[] })?.points ?? [];
      const cid = points.find(p => typeof p.customdata === 'string')?.customdata;
      if (typeof cid === 'string') onClick(cid);
    });
  }
}

export async function resize(node: HTMLElement): Promise<void> {
  if ((node as unknown as { _fullLayout?: unknown })._fullLayout === undefined) return;
  const Plotly = await loadPlotly();
  Plotly.Plots.resize(node);
}

export async function purge(node: HTMLElement): Promise<void> {
  if (!loading) return;
  const Plotly = await loadPlotly();
  Plotly.purge(node);
}
