/**
 * The live run monitor (`.zs-monitor[data-run=ID]`): the mime renderer of
 * `application/vnd.zeroshot.run+json` outputs and the main-area view the Studies panel opens.
 * It reads `runs/{run_id}` every second while the run is live or Continue is on offer, so a
 * notebook reopened without its kernel shows the run as it is now.
 */

import { Widget } from '@lumino/widgets';
import { ApiError, postAPI, requestAPI, seg } from './api';
import { append, clear, el } from './dom';
import {
  buttonStates,
  chartSignature,
  continuedText,
  monitorFigure,
  newestRounds,
  phaseTitle,
  phaseWord,
  shouldPoll
} from './monitormodel';
import { plot, purge, resize } from './plotly';
import { formatCell, formatNumber } from './tablemodel';
import type { ActionReply, RunRef, RunState } from './types';
import { Notice, noticeText } from './words';

const POLL_MS = 1000;
const ERROR_RETRY_MS = 5000;

export class RunMonitor extends Widget {
  private ref: RunRef | null = null;
  private state: RunState | null = null;
  private via: string[] = [];
  private timer: number | null = null;
  private generation = 0;
  private pending: 'stop' | 'continue' | null = null;
  private notice: Notice | null = null;
  private lastChart = '';
  private readonly root = el('div', { class: 'zs-monitor' });
  private readonly titleNode = el('h3', { class: 'zs-monitor-title' });
  private readonly runIdNode = el('span', { class: 'zs-monitor-run zs-muted' });
  private readonly followed = el('div', { class: 'zs-monitor-followed', hidden: '' });
  private readonly phase = el('span', { class: 'zs-monitor-phase' });
  private readonly progress = el('span', { class: 'zs-monitor-progress' });
  private readonly stopButton = el('button', { class: 'zs-stop jp-Button', type: 'button' }, 'Stop');
  private readonly continueButton = el('button', { class: 'zs-continue jp-Button', type: 'button', hidden: '' }, 'Continue');
  private readonly message = el('div', { class: 'zs-monitor-message' });
  private readonly error = el('div', { class: 'zs-monitor-error zs-error', hidden: '' });
  private readonly incumbent = el('div', { class: 'zs-incumbent' });
  private readonly chart = el('div', { class: 'zs-chart zs-monitor-chart' });
  private readonly rounds = el('div', { class: 'zs-monitor-rounds zs-table-scroll' });
  private readonly cause = el('div', { class: 'zs-monitor-cause zs-error', hidden: '' });
  private readonly logPre = el('pre', { class: 'zs-monitor-log-text' });
  private readonly log = el('details', { class: 'zs-monitor-log' }, el('summary', {}, 'Log'), this.logPre);
  private readonly content = el('div', { class: 'zs-monitor-content', hidden: '' });

  constructor(ref?: RunRef) {
    super();
    this.addClass('zs-monitor-widget');
    this.addClass('zs-root');
    this.stopButton.addEventListener('click', () => void this.stopRun());
    this.continueButton.addEventListener('click', () => void this.continueRun());
    this.content.append(
      el('div', { class: 'zs-monitor-status' }, this.phase, this.progress, el('span', { class: 'zs-monitor-buttons' }, this.stopButton, this.continueButton)),
      this.message,
      this.cause,
      this.incumbent,
      this.chart,
      this.rounds,
      this.log
    );
    this.root.append(el('div', { class: 'zs-monitor-header' }, this.titleNode, this.runIdNode), this.followed, this.error, this.content);
    this.node.appendChild(this.root);
    if (ref) this.setRun(ref);
  }

  /** Says what is wrong instead of showing a blank box. */
  showInvalid(text: string): void {
    this.cancel();
    this.error.hidden = false;
    this.error.textContent = text;
    this.content.hidden = true;
  }

  get runId(): string | null {
    return this.ref?.run_id ?? null;
  }

  /** Shows a run (a new output, or the run a continuation started). */
  setRun(ref: RunRef, via: string[] = []): void {
    if (this.ref && this.ref.run_id === ref.run_id && this.ref.workspace === ref.workspace) return;
    this.ref = { run_id: ref.run_id, workspace: ref.workspace };
    this.via = via;
    this.state = null;
    this.lastChart = '';
    this.pending = null;
    this.root.dataset.run = ref.run_id;
    this.titleNode.textContent = `Run ${ref.run_id}`;
    this.runIdNode.textContent = ref.run_id;
    this.title.label = `Run ${ref.run_id}`;
    this.title.caption = `zeroshot run ${ref.run_id}`;
    const followedText = continuedText(via, ref.run_id);
    this.followed.textContent = followedText;
    this.followed.hidden = followedText === '';
    this.showNotice();
    this.poll(0);
  }

  protected onResize(): void {
    void resize(this.chart);
  }

  protected onAfterShow(): void {
    void resize(this.chart);
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.cancel();
    void purge(this.chart);
    super.dispose();
  }

  private cancel(): void {
    this.generation++;
    if (this.timer !== null) window.clearTimeout(this.timer);
    this.timer = null;
  }

  private poll(delay: number): void {
    this.cancel();
    const generation = this.generation;
    this.timer = window.setTimeout(() => void this.tick(generation), delay);
  }

  private async tick(generation: number): Promise<void> {
    if (generation !== this.generation || this.isDisposed || !this.ref) return;
    const ref = this.ref;
    let state: RunState;
    try {
      state = await requestAPI<RunState>(`runs/${seg(ref.run_id)}`, {}, { workspace: ref.workspace });
    } catch (e) {
      if (generation !== this.generation || this.isDisposed) return;
      this.showError(e as ApiError);
      this.poll(ERROR_RETRY_MS);
      return;
    }
    if (generation !== this.generation || this.isDisposed) return;
    this.error.hidden = true;
    if (state.continued_by && state.continued_by !== state.run_id) {
      this.setRun({ run_id: state.continued_by, workspace: state.workspace || ref.workspace }, [...this.via, ref.run_id]);
      return;
    }
    this.state = state;
    this.render(state);
    if (shouldPoll(state)) this.poll(POLL_MS);
  }

  private showError(err: ApiError): void {
    this.error.hidden = false;
    const id = this.ref?.run_id ?? '';
    if (err.missingExtension) {
      this.error.textContent = `Cannot show run ${id}: the zeroshot server extension is not running in this Jupyter server (install zeroshot-workbench where Jupyter runs and restart Jupyter).`;
    } else if (err.status === 404) {
      this.error.textContent = `Run ${id} is unknown here: ${err.message}`;
    } else {
      this.error.textContent = `Cannot read run ${id}: ${err.message}`;
    }
    if (!this.state) this.content.hidden = true;
  }

  private render(s: RunState): void {
    this.content.hidden = false;
    this.titleNode.textContent = s.title || `Run ${s.run_id}`;
    this.runIdNode.textContent = s.run_id;
    this.root.dataset.phase = s.phase;
    this.phase.textContent = phaseWord(s.phase);
    this.phase.title = phaseTitle(s.phase);
    this.phase.dataset.phase = s.phase;
    this.showNotice();
    this.progress.textContent = s.progress_text;
    if (this.pending === 'stop' && s.phase !== 'running' && s.phase !== 'admitted') this.pending = null;
    const buttons = buttonStates(s, this.pending);
    this.stopButton.disabled = buttons.stop.disabled;
    this.stopButton.textContent = buttons.stop.label;
    this.stopButton.title = buttons.stop.title;
    this.stopButton.hidden = !buttons.stop.visible;
    this.continueButton.hidden = !buttons.continue.visible;
    this.continueButton.disabled = buttons.continue.disabled;
    this.continueButton.textContent = buttons.continue.label;
    this.continueButton.title = buttons.continue.title;
    this.cause.hidden = !s.cause;
    this.cause.textContent = s.cause ? `Why it failed: ${s.cause}` : '';
    this.renderIncumbent(s);
    if (s.is_research || s.chart.rounds.length) {
      const sig = chartSignature(s);
      if (sig !== this.lastChart) {
        this.lastChart = sig;
        this.chart.hidden = false;
        void plot(this.chart, monitorFigure(s));
      }
    } else {
      this.chart.hidden = true;
    }
    this.renderRounds(s);
    const atBottom = this.logPre.scrollHeight - this.logPre.scrollTop - this.logPre.clientHeight < 4;
    if (this.logPre.textContent !== s.log_tail) {
      this.logPre.textContent = s.log_tail || '(no log yet)';
      if (atBottom) this.logPre.scrollTop = this.logPre.scrollHeight;
    }
  }

  private renderIncumbent(s: RunState): void {
    clear(this.incumbent);
    const inc = s.incumbent;
    if (!s.is_research && !inc) {
      this.incumbent.hidden = true;
      return;
    }
    this.incumbent.hidden = false;
    append(
      this.incumbent,
      el('div', { class: 'zs-incumbent-label zs-muted' }, s.study ? `Incumbent of study ${s.study}` : 'Incumbent'),
      el(
        'div',
        { class: 'zs-incumbent-value' },
        inc ? `${s.metric ?? 'metric'} = ${formatNumber(inc.metric)}` : 'none yet'
      ),
      inc ? el('div', { class: 'zs-incumbent-id zs-muted' }, `${inc.candidate_id} · round ${inc.round}`) : null,
      s.plateau_text ? el('div', { class: 'zs-incumbent-plateau' }, s.plateau_text) : null
    );
  }

  private renderRounds(s: RunState): void {
    clear(this.rounds);
    const rows = newestRounds(s.rounds ?? []);
    if (!rows.length) {
      if (s.is_research) this.rounds.appendChild(el('p', { class: 'zs-muted' }, 'No reviewed rounds yet.'));
      return;
    }
    const head = el('tr', {}, ...['round', 'candidate', 'what was tried', s.metric ?? 'metric', 'decision'].map(h => el('th', {}, h)));
    const body = el('tbody');
    for (const r of rows) {
      const params = Object.entries(r.params ?? {})
        .map(([k, v]) => `${k}=${formatCell(v)}`)
        .join(', ');
      body.appendChild(
        el(
          'tr',
          { class: `zs-monitor-round${r.adopted ? ' zs-adopted' : ''}`, 'data-round': String(r.round) },
          el('td', {}, String(r.round)),
          el('td', {}, r.candidate_id),
          el('td', { class: 'zs-wrap' }, [r.approach, params].filter(Boolean).join(': ')),
          el('td', {}, r.metric === null ? r.status : formatNumber(r.metric)),
          el('td', { class: 'zs-wrap' }, r.decision || r.disposition)
        )
      );
    }
    this.rounds.appendChild(el('table', { class: 'zs-table' }, el('thead', {}, head), body));
  }

  private setNotice(notice: Notice | null): void {
    this.notice = notice;
    this.showNotice();
  }

  /** The message line: what the last action said, or the end state once the run ended. */
  private showNotice(): void {
    const runId = this.ref?.run_id ?? '';
    const s = this.state && this.state.run_id === runId ? this.state : null;
    this.message.textContent = noticeText(this.notice, runId, s?.phase ?? null, s?.can_continue ?? false);
  }

  private async stopRun(): Promise<void> {
    const ref = this.ref;
    if (!ref) return;
    this.pending = 'stop';
    if (this.state) this.render(this.state);
    try {
      const reply = await postAPI<ActionReply>(`runs/${seg(ref.run_id)}/stop`, { workspace: ref.workspace });
      this.setNotice({ action: 'stop', runId: ref.run_id, text: reply.message });
    } catch (e) {
      this.pending = null;
      this.setNotice({ action: 'error', runId: ref.run_id, text: `Could not stop the run: ${(e as Error).message}` });
    }
    this.poll(0);
  }

  private async continueRun(): Promise<void> {
    const ref = this.ref;
    if (!ref) return;
    this.pending = 'continue';
    if (this.state) this.render(this.state);
    try {
      const reply = await postAPI<ActionReply>(`runs/${seg(ref.run_id)}/continue`, { workspace: ref.workspace });
      this.setNotice({ action: 'continue', runId: reply.run_id, text: reply.message });
      this.setRun({ run_id: reply.run_id, workspace: ref.workspace }, [...this.via, ref.run_id]);
    } catch (e) {
      this.pending = null;
      this.setNotice({ action: 'error', runId: ref.run_id, text: `Could not continue: ${(e as Error).message}` });
      if (this.state) this.render(this.state);
    }
  }
}

/** Reads a RunRef from a mime bundle's data (strings only; anything else is an error). */
export function parseRunRef(data: unknown): RunRef | null {
  if (typeof data !== 'object' || data === null) return null;
  const d = data as Record<string, unknown>;
  if (typeof d.run_id !== 'string' || d.run_id === '') return null;
  return { run_id: d.run_id, workspace: typeof d.workspace === 'string' ? d.workspace : '' };
}
