/**
 * The candidate pane (`.zs-candidate[data-candidate=CID]`): one measured candidate's params,
 * metric, decision, review, evidence and diff, fetched from
 * `studies/{name}/candidates/{cid}`.
 */

import { requestAPI, seg } from './api';
import { clear, el, facts } from './dom';
import { formatCell, formatNumber } from './tablemodel';
import type { CandidateDetail } from './types';
import { gateWords } from './words';

export class CandidatePane {
  readonly node: HTMLElement;
  private token = 0;

  constructor(private readonly study: string, private readonly workspace: string | undefined) {
    this.node = el('div', { class: 'zs-candidate-host' });
  }

  close(): void {
    this.token++;
    clear(this.node);
  }

  async show(candidateId: string): Promise<void> {
    const token = ++this.token;
    clear(this.node);
    const pane = el('div', { class: 'zs-candidate', 'data-candidate': candidateId });
    const closeButton = el('button', { class: 'zs-candidate-close jp-Button', title: 'Close', type: 'button' }, '×');
    closeButton.addEventListener('click', () => this.close());
    pane.appendChild(el('div', { class: 'zs-candidate-header' }, el('h3', {}, `Candidate ${candidateId}`), closeButton));
    const body = el('div', { class: 'zs-candidate-body' }, el('p', { class: 'zs-muted' }, 'Loading…'));
    pane.appendChild(body);
    this.node.appendChild(pane);
    pane.scrollIntoView?.({ block: 'nearest' });
    let detail: CandidateDetail;
    try {
      detail = await requestAPI<CandidateDetail>(
        `studies/${seg(this.study)}/candidates/${seg(candidateId)}`,
        {},
        { workspace: this.workspace }
      );
    } catch (e) {
      if (token !== this.token) return;
      clear(body);
      body.appendChild(el('p', { class: 'zs-error' }, `Could not load the candidate: ${(e as Error).message}`));
      return;
    }
    if (token !== this.token) return;
    clear(body);
    renderDetail(body, detail);
  }
}

export function renderDetail(body: HTMLElement, d: CandidateDetail): void {
  body.appendChild(
    facts([
      ['metric', d.metric === null ? 'no metric' : formatNumber(d.metric)],
      ['status', d.status],
      ['round', String(d.round)],
      ['adopted', d.adopted ? 'yes' : 'no'],
      ['approach', d.approach || ''],
      ['strategy', d.strategy || ''],
      ['seeds', String(d.seeds ?? '')],
      ['gain', formatNumber(d.gain)],
      ['noise floor', formatNumber(d.noise_floor)],
      ['gate', d.gate_decision ? gateWords(d.gate_decision) : ''],
      ['harness', d.harness ?? ''],
      ['model', d.model ?? ''],
      ['cost (USD)', formatNumber(d.cost_usd)],
      ['tokens', formatNumber(d.tokens)],
      ['duration (s)', formatNumber(d.duration_s)],
      ['run', d.run_id]
    ])
  );
  const params = el('table', { class: 'zs-params' });
  for (const [k, v] of Object.entries(d.params ?? {})) {
    params.appendChild(el('tr', {}, el('th', {}, k), el('td', {}, formatCell(v))));
  }
  body.appendChild(el('h4', {}, 'Parameters'));
  body.appendChild(el('div', { class: 'zs-scroll-x' }, params));
  const block = (title: string, cls: string, text: string, pre = false) => {
    if (!text) return;
    body.appendChild(el('h4', {}, title));
    body.appendChild(pre ? el('pre', { class: cls }, text) : el('div', { class: `${cls} zs-wrap` }, text));
  };
  block('Decision', 'zs-candidate-decision', d.decision);
  block('Rationale', 'zs-candidate-rationale', d.rationale);
  block('Review', 'zs-candidate-review', d.review);
  block('Evidence', 'zs-candidate-evidence', d.evidence, true);
  block('Diff', 'zs-candidate-diff zs-diff', d.diff, true);
  if (d.curve && d.curve.length) {
    body.appendChild(el('h4', {}, 'Curve'));
    body.appendChild(
      el('div', { class: 'zs-candidate-curve zs-wrap' }, d.curve.map(p => `${p.step}: ${formatNumber(p.value)}`).join(' · '))
    );
  }
}
