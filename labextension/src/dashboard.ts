/**
 * The study dashboard (`.zs-dashboard[data-study=NAME]`), a main-area widget: best-so-far with
 * every candidate (`.zs-chart-best`, click a point for its `.zs-candidate` pane), the runs
 * table, parallel coordinates, slices, importance, a contour, compare, rounds and insights,
 * and an export link. Refreshes every 2.5 s while the study is running.
 */

import { Widget } from '@lumino/widgets';
import { ApiError, apiUrl, requestAPI, seg } from './api';
import { CandidatePane } from './candidate';
import {
  bestSoFarFigure,
  compareFigure,
  CompareStudy,
  contourFigure,
  contourParams,
  importanceFigure,
  parcoordsFigure,
  sliceFigures
} from './chartdata';
import { clear, el, facts, section } from './dom';
import { plot, purge, resize } from './plotly';
import { RunsTable } from './table';
import { formatCell, formatNumber } from './tablemodel';
import type { StudiesReply, StudyDashboard, StudyRow, Value } from './types';

const REFRESH_MS = 2500;

export class StudyDashboardWidget extends Widget {
  readonly study: string;
  readonly workspace: string | undefined;
  private data: StudyDashboard | null = null;
  private row: StudyRow | null = null;
  private otherStudies: StudyRow[] = [];
  private timer: number | null = null;
  private busy = false;
  private dataSignature = '';
  private readonly header = el('div', { class: 'zs-dashboard-header' });
  private readonly status = el('div', { class: 'zs-dashboard-status' });
  private readonly best = el('div', { class: 'zs-chart zs-chart-best' });
  private readonly parcoords = el('div', { class: 'zs-chart zs-chart-parcoords' });
  private readonly slice = el('div', { class: 'zs-chart-slice' });
  private readonly importance = el('div', { class: 'zs-chart zs-chart-importance' });
  private readonly contour = el('div', { class: 'zs-chart zs-chart-contour' });
  private readonly contourNote = el('p', { class: 'zs-muted zs-contour-note' });
  private readonly compareChoices = el('div', { class: 'zs-compare-choices' });
  private readonly compareWarning = el('div', { class: 'zs-compare-warning zs-warning', hidden: '' });
  private readonly compareChart = el('div', { class: 'zs-chart zs-chart-compare' });
  private readonly rounds = el('div', { class: 'zs-rounds zs-table-scroll' });
  private readonly insights = el('ul', { class: 'zs-insights' });
  private readonly candidate: CandidatePane;
  private readonly table: RunsTable;
  private compared = new Set<string>();
  private compareToken = 0;

  constructor(study: string, workspace?: string) {
    super();
    this.study = study;
    this.workspace = workspace;
    this.id = `zeroshot-study-${study.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    this.title.label = `Study ${study}`;
    this.title.caption = `zeroshot study ${study}${workspace ? ` in ${workspace}` : ''}`;
    this.title.closable = true;
    this.addClass('zs-dashboard');
    this.addClass('zs-root');
    this.node.dataset.study = study;
    this.candidate = new CandidatePane(study, workspace);
    this.table = new RunsTable(cid => void this.candidate.show(cid));
    const exportLink = el(
      'a',
      {
        class: 'zs-export jp-Button',
        href: apiUrl(`studies/${seg(study)}/export.csv`, { workspace }),
        download: `${study}.csv`,
        title: "Download the study's candidates as CSV"
      },
      'Export CSV'
    );
    const refresh = el('button', { class: 'zs-refresh jp-Button', type: 'button' }, 'Refresh');
    refresh.addEventListener('click', () => void this.refresh(true));
    this.node.appendChild(
      el(
        'div',
        { class: 'zs-dashboard-body' },
        el('div', { class: 'zs-dashboard-top' }, this.header, el('div', { class: 'zs-actions' }, refresh, exportLink)),
        this.status,
        section('zs-best-section', 'Best so far (click a point for the candidate)', this.best),
        this.candidate.node,
        section('zs-table-section', 'Runs', this.table.node),
        section('zs-parcoords-section', 'Parallel coordinates (drag along an axis to brush)', this.parcoords),
        section('zs-slice-section', 'Slices', this.slice),
        el(
          'div',
          { class: 'zs-two-up' },
          section('zs-importance-section', 'Parameter importance', this.importance),
          section('zs-contour-section', 'Contour', this.contourNote, this.contour)
        ),
        section('zs-compare-section', 'Compare with other studies', this.compareChoices, this.compareWarning, this.compareChart),
        section('zs-rounds-section', 'Rounds', this.rounds),
        section('zs-insights-section', 'Insights', this.insights)
      )
    );
  }

  protected onAfterAttach(): void {
    void this.refresh(true);
    this.schedule();
  }

  protected onBeforeDetach(): void {
    this.stop();
  }

  protected onResize(): void {
    for (const node of Array.from(this.node.querySelectorAll<HTMLElement>('.js-plotly-plot'))) {
      void resize(node);
    }
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.stop();
    for (const node of Array.from(this.node.querySelectorAll<HTMLElement>('.js-plotly-plot'))) {
      void purge(node);
    }
    super.dispose();
  }

  private schedule(): void {
    this.stop();
    this.timer = window.setInterval(() => void this.refresh(false), REFRESH_MS);
  }

  private stop(): void {
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** Reads the studies list (running? other studies); the dashboard when it may have changed. */
  async refresh(force: boolean): Promise<void> {
    if (this.busy || this.isDisposed) return;
    if (!force && !this.isVisible) return;
    this.busy = true;
    try {
      const list = await requestAPI<StudiesReply>('studies', {}, { workspace: this.workspace });
      const row = list.studies.find(s => s.name === this.study) ?? null;
      const changed =
        force ||
        !this.data ||
        !row ||
        row.running ||
        row.rounds !== this.row?.rounds ||
        row.updated !== this.row?.updated;
      this.row = row;
      this.otherStudies = list.studies.filter(s => s.name !== this.study);
      this.renderCompareChoices();
      if (changed) {
        const data = await requestAPI<StudyDashboard>(`studies/${seg(this.study)}`, {}, { workspace: this.workspace });
        this.status.textContent = '';
        this.status.className = 'zs-dashboard-status';
        this.render(data);
      }
    } catch (e) {
      const err = e as ApiError;
      this.status.className = 'zs-dashboard-status zs-error';
      let text = `Could not load study ${this.study}: ${err.message}`;
      if (err.studies && err.studies.length) text += ` Studies here: ${err.studies.join(', ')}.`;
      this.status.textContent = text;
    } finally {
      this.busy = false;
    }
  }

  private render(data: StudyDashboard): void {
    const signature = JSON.stringify(data);
    const first = this.data === null;
    this.data = data;
    this.renderHeader(data);
    if (signature === this.dataSignature && !first) return;
    this.dataSignature = signature;
    const params = new Map<string, Record<string, Value>>();
    for (const c of data.candidates) params.set(c.candidate_id, c.params);
    const openCandidate = (cid: string) => void this.candidate.show(cid);
    void plot(this.best, bestSoFarFigure(data.chart, { metric: data.metric, params, runStartsAfter: 0 }), {
      onClick: openCandidate
    });
    this.table.setData(data.candidates, data.params);
    const pc = parcoordsFigure(data.candidates, data.params, data.metric, data.direction);
    if (pc) void plot(this.parcoords, pc);
    else this.placeholder(this.parcoords, 'Parallel coordinates need two measured candidates.');
    this.renderSlices(data, openCandidate);
    const imp = importanceFigure(data.importance);
    if (imp) void plot(this.importance, imp);
    else this.placeholder(this.importance, 'No importance yet (it needs a few measured rounds).');
    const pair = contourParams(data.params, data.importance, data.candidates);
    const cf = pair ? contourFigure(data.candidates, pair[0], pair[1], data.params, data.metric) : null;
    if (pair && cf) {
      this.contourNote.textContent = `${data.metric} over ${pair[0]} and ${pair[1]} (the two most important numeric parameters); points are candidates.`;
      void plot(this.contour, cf, { onClick: openCandidate });
    } else {
      this.contourNote.textContent = '';
      this.placeholder(
        this.contour,
        pair ? 'A contour needs three measured candidates.' : 'A contour needs two numeric parameters.'
      );
    }
    this.renderRounds(data);
    clear(this.insights);
    for (const text of data.insights) this.insights.appendChild(el('li', {}, text));
    if (!data.insights.length) this.insights.appendChild(el('li', { class: 'zs-muted' }, 'No insights yet.'));
    void this.renderCompare();
  }

  private placeholder(node: HTMLElement, text: string): void {
    void purge(node);
    clear(node);
    node.appendChild(el('p', { class: 'zs-muted zs-placeholder' }, text));
  }

  private renderHeader(data: StudyDashboard): void {
    clear(this.header);
    const running = this.row?.running ?? false;
    this.header.appendChild(
      el(
        'h2',
        { class: 'zs-dashboard-title' },
        `Study ${data.name}`,
        running ? el('span', { class: 'zs-running-mark', title: 'A run is working on this study' }, ' ● running') : null
      )
    );
    const inc = data.incumbent;
    this.header.appendChild(
      facts([
        ['task', data.task],
        ['metric', `${data.metric} (${data.direction})`],
        ['rounds', String(data.chart.rounds.length)],
        ['incumbent', inc ? `${inc.candidate_id}: ${formatNumber(inc.metric)} (round ${inc.round})` : 'none yet'],
        ['runs', data.runs.join(', ')]
      ])
    );
  }

  private renderSlices(data: StudyDashboard, onClick: (cid: string) => void): void {
    for (const node of Array.from(this.slice.querySelectorAll<HTMLElement>('.js-plotly-plot'))) void purge(node);
    clear(this.slice);
    const figures = sliceFigures(data.candidates, data.params, data.metric);
    if (!figures.length) {
      this.slice.appendChild(el('p', { class: 'zs-muted' }, 'No parameters to slice.'));
      return;
    }
    for (const f of figures) {
      const node = el('div', { class: 'zs-chart zs-slice', 'data-param': f.param });
      this.slice.appendChild(node);
      void plot(node, f.figure, { onClick });
    }
  }

  private renderRounds(data: StudyDashboard): void {
    clear(this.rounds);
    const head = el('tr', {}, ...['round', 'candidate', 'approach', 'params', data.metric, 'best so far', 'decision'].map(h => el('th', {}, h)));
    const body = el('tbody');
    for (const r of [...data.rounds].reverse()) {
      const tr = el(
        'tr',
        { class: 'zs-round-row', 'data-round': String(r.round), 'data-candidate': r.candidate_id },
        el('td', {}, String(r.round)),
        el('td', {}, r.candidate_id),
        el('td', { class: 'zs-wrap' }, r.approach),
        el('td', { class: 'zs-wrap' }, Object.entries(r.params).map(([k, v]) => `${k}=${formatCell(v)}`).join(', ')),
        el('td', {}, r.metric === null ? r.status : formatNumber(r.metric)),
        el('td', {}, formatNumber(r.best_so_far)),
        el('td', { class: 'zs-wrap' }, r.decision || r.disposition)
      );
      if (r.adopted) tr.classList.add('zs-adopted');
      tr.addEventListener('click', () => void this.candidate.show(r.candidate_id));
      body.appendChild(tr);
    }
    if (!data.rounds.length) {
      this.rounds.appendChild(el('p', { class: 'zs-muted' }, 'No reviewed rounds yet.'));
      return;
    }
    this.rounds.appendChild(el('table', { class: 'zs-table' }, el('thead', {}, head), body));
  }

  private renderCompareChoices(): void {
    const names = this.otherStudies.map(s => s.name);
    const current = Array.from(this.compareChoices.querySelectorAll<HTMLInputElement>('input')).map(i => i.dataset.study);
    if (JSON.stringify(current) === JSON.stringify(names)) return;
    clear(this.compareChoices);
    if (!names.length) {
      this.compareChoices.appendChild(el('p', { class: 'zs-muted' }, 'No other studies in this workspace.'));
      return;
    }
    for (const s of this.otherStudies) {
      const box = el('input', { type: 'checkbox', 'data-study': s.name }) as HTMLInputElement;
      box.checked = this.compared.has(s.name);
      box.addEventListener('change', () => {
        if (box.checked) this.compared.add(s.name);
        else this.compared.delete(s.name);
        void this.renderCompare();
      });
      this.compareChoices.appendChild(el('label', { class: 'zs-compare-choice' }, box, `${s.name} (${s.task} · ${s.metric})`));
    }
  }

  private async renderCompare(): Promise<void> {
    const token = ++this.compareToken;
    if (!this.data) return;
    const names = Array.from(this.compared);
    if (!names.length) {
      this.compareWarning.hidden = true;
      this.placeholder(this.compareChart, 'Pick studies above to compare their best-so-far.');
      return;
    }
    const others = await Promise.all(
      names.map(n =>
        requestAPI<StudyDashboard>(`studies/${seg(n)}`, {}, { workspace: this.workspace }).catch(() => null)
      )
    );
    if (token !== this.compareToken) return;
    const studies: CompareStudy[] = [this.data, ...others.filter((o): o is StudyDashboard => o !== null)].map(d => ({
      name: d.name,
      task: d.task,
      metric: d.metric,
      direction: d.direction,
      chart: d.chart
    }));
    const { figure, warning } = compareFigure(studies);
    this.compareWarning.textContent = warning ?? '';
    this.compareWarning.hidden = warning === null;
    void plot(this.compareChart, figure);
  }
}
