/**
 * The Studies side panel (`#zeroshot-studies-panel`): the workspace's studies
 * (`.zs-study-row[data-study=NAME]`) and runs (`.zs-run-row[data-run=ID]`), polled every 2 s
 * from the server extension (no kernel involved).
 */

import { Widget } from '@lumino/widgets';
import { ApiError, requestAPI } from './api';
import { clear, el } from './dom';
import type { RunRow, RunsReply, StudiesReply, StudyRow } from './types';
import { incumbentText, phaseTitle, phaseWord } from './words';

const POLL_MS = 2000;

export interface PanelActions {
  openStudy: (study: string, workspace: string) => void;
  openRun: (runId: string, workspace: string) => void;
}

export class StudiesPanel extends Widget {
  private timer: number | null = null;
  private busy = false;
  private signature = '';
  private readonly workspaceLine = el('div', { class: 'zs-panel-workspace zs-muted' });
  private readonly message = el('div', { class: 'zs-panel-message' });
  private readonly studies = el('div', { class: 'zs-studies' });
  private readonly runs = el('div', { class: 'zs-runs' });

  constructor(private readonly actions: PanelActions) {
    super();
    this.id = 'zeroshot-studies-panel';
    this.addClass('zs-panel');
    this.addClass('zs-root');
    this.title.caption = 'zeroshot studies and runs';
    const refresh = el('button', { class: 'zs-refresh jp-Button', type: 'button', title: 'Refresh now' }, '↻');
    refresh.addEventListener('click', () => void this.refresh(true));
    this.node.appendChild(
      el(
        'div',
        { class: 'zs-panel-body' },
        el('div', { class: 'zs-panel-header' }, el('h2', {}, 'Studies'), refresh),
        this.workspaceLine,
        this.message,
        this.studies,
        el('h2', { class: 'zs-panel-runs-title' }, 'Runs'),
        this.runs
      )
    );
  }

  protected onAfterAttach(): void {
    void this.refresh(true);
    this.timer = window.setInterval(() => void this.refresh(false), POLL_MS);
  }

  protected onBeforeDetach(): void {
    if (this.timer !== null) window.clearInterval(this.timer);
    this.timer = null;
  }

  protected onAfterShow(): void {
    void this.refresh(true);
  }

  dispose(): void {
    if (this.timer !== null) window.clearInterval(this.timer);
    this.timer = null;
    super.dispose();
  }

  async refresh(force: boolean): Promise<void> {
    if (this.busy || this.isDisposed || (!force && !this.isVisible)) return;
    this.busy = true;
    try {
      const [studies, runs] = await Promise.all([
        requestAPI<StudiesReply>('studies'),
        requestAPI<RunsReply>('runs')
      ]);
      this.message.textContent = '';
      this.message.className = 'zs-panel-message';
      const signature = JSON.stringify([studies, runs]);
      if (signature !== this.signature) {
        this.signature = signature;
        this.render(studies, runs);
      }
    } catch (e) {
      this.signature = '';
      const err = e as ApiError;
      this.message.className = 'zs-panel-message zs-error';
      this.message.textContent =
        err.missingExtension
          ? 'The zeroshot server extension is not running in this Jupyter server: install zeroshot-workbench in the environment Jupyter runs from and restart Jupyter.'
          : `Could not read the studies: ${err.message}`;
    } finally {
      this.busy = false;
    }
  }

  private render(studies: StudiesReply, runs: RunsReply): void {
    const workspace = studies.workspace;
    this.workspaceLine.textContent = `Workspace: ${workspace}`;
    this.workspaceLine.title = workspace;
    clear(this.studies);
    if (!studies.studies.length) {
      this.studies.appendChild(
        el(
          'p',
          { class: 'zs-empty' },
          `No studies in ${workspace} yet: run `,
          el('code', {}, 'zeroshot research run rosenbrock'),
          ' or the quickstart notebook.'
        )
      );
    }
    for (const s of studies.studies) this.studies.appendChild(this.studyRow(s, workspace));
    clear(this.runs);
    if (!runs.runs.length) {
      this.runs.appendChild(el('p', { class: 'zs-empty' }, 'No runs yet.'));
    }
    for (const r of runs.runs.slice(0, 50)) this.runs.appendChild(this.runRow(r, runs.workspace));
  }

  private studyRow(s: StudyRow, workspace: string): HTMLElement {
    const inc = s.incumbent;
    const row = el(
      'div',
      {
        class: `zs-study-row${s.running ? ' zs-is-running' : ''}`,
        'data-study': s.name,
        role: 'button',
        tabindex: '0',
        title: `Open the dashboard of study ${s.name}`
      },
      el(
        'div',
        { class: 'zs-row-main' },
        el('span', { class: 'zs-study-name' }, s.name),
        s.running ? el('span', { class: 'zs-running-mark', title: 'A run is working on this study' }, '● running') : null
      ),
      el(
        'div',
        { class: 'zs-row-detail zs-muted' },
        el('span', { class: 'zs-study-task' }, s.task),
        ' · ',
        el('span', { class: 'zs-study-rounds' }, `${s.rounds} round${s.rounds === 1 ? '' : 's'}`),
        ' · ',
        el(
          'span',
          {
            class: 'zs-study-incumbent',
            title: inc
              ? `${inc.candidate_id} (${inc.round ? `adopted in round ${inc.round}` : 'the starting candidate'}): the study's incumbent, whose ${s.metric} this is`
              : ''
          },
          incumbentText(s.metric, inc)
        )
      )
    );
    const open = () => this.actions.openStudy(s.name, workspace);
    row.addEventListener('click', open);
    row.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' || ev.key === ' ') open();
    });
    return row;
  }

  private runRow(r: RunRow, workspace: string): HTMLElement {
    const row = el(
      'div',
      {
        class: `zs-run-row zs-phase-${r.phase}`,
        'data-run': r.run_id,
        role: 'button',
        tabindex: '0',
        title: `Open the monitor of run ${r.run_id}`
      },
      el('div', { class: 'zs-row-main' }, el('span', { class: 'zs-run-title' }, r.title || r.run_id)),
      el(
        'div',
        { class: 'zs-row-detail zs-muted' },
        el('span', { class: 'zs-run-id' }, r.run_id),
        ' · ',
        el('span', { class: 'zs-run-phase', 'data-phase': r.phase, title: phaseTitle(r.phase) }, phaseWord(r.phase)),
        r.study ? ` · ${r.study}` : ''
      )
    );
    const open = () => this.actions.openRun(r.run_id, workspace);
    row.addEventListener('click', open);
    row.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' || ev.key === ' ') open();
    });
    return row;
  }
}
