/**
 * The runs table (`.zs-runs-table`): a study's candidates with their params and metrics as
 * columns; header clicks sort, `.zs-columns` chooses columns, `.zs-filter-input` filters with
 * the expression language (errors in `.zs-filter-error`, the last good filter stays).
 */

import { clear, el } from './dom';
import {
  Column,
  columnsFor,
  cell,
  FilterState,
  formatCell,
  NO_FILTER,
  nextSort,
  SortState,
  updateFilter,
  viewRows,
  visibleColumns
} from './tablemodel';
import type { CandidateRow, ParamSpec } from './types';

export class RunsTable {
  readonly node: HTMLElement;
  private rows: CandidateRow[] = [];
  private columns: Column[] = [];
  private chosen = new Map<string, boolean>();
  private sort: SortState | null = null;
  private filter: FilterState = NO_FILTER;
  private readonly input: HTMLInputElement;
  private readonly error: HTMLElement;
  private readonly chooser: HTMLElement;
  private readonly tableHost: HTMLElement;
  private readonly count: HTMLElement;
  private columnSignature = '';

  constructor(private readonly onRowClick: (candidateId: string) => void) {
    this.input = el('input', {
      class: 'zs-filter-input jp-mod-styled',
      type: 'text',
      placeholder: 'filter, e.g. metric < 0.5 and status == "ok"',
      spellcheck: 'false',
      'aria-label': 'Filter the runs'
    });
    this.input.addEventListener('input', () => this.applyFilter());
    this.error = el('div', { class: 'zs-filter-error', role: 'alert' });
    this.count = el('span', { class: 'zs-muted zs-count' });
    this.chooser = el('details', { class: 'zs-columns' });
    this.tableHost = el('div', { class: 'zs-table-scroll' });
    this.node = el(
      'div',
      { class: 'zs-runs-table' },
      el('div', { class: 'zs-table-toolbar' }, this.input, this.chooser, this.count),
      this.error,
      this.tableHost
    );
  }

  setData(rows: CandidateRow[], params: ParamSpec[]): void {
    this.rows = rows;
    this.columns = columnsFor(rows, params);
    const sig = this.columns.map(c => `${c.key}\u0001${c.initial}`).join('\u0000');
    if (sig !== this.columnSignature) {
      this.columnSignature = sig;
      this.renderChooser();
    }
    this.renderTable();
  }

  private applyFilter(): void {
    this.filter = updateFilter(this.filter, this.input.value);
    this.error.textContent = this.filter.error ?? '';
    this.input.classList.toggle('zs-invalid', this.filter.error !== null);
    this.renderTable();
  }

  private renderChooser(): void {
    clear(this.chooser);
    this.chooser.appendChild(el('summary', {}, 'Columns'));
    const list = el('div', { class: 'zs-columns-list' });
    const shown = new Set(visibleColumns(this.columns, this.chosen).map(c => c.key));
    for (const c of this.columns) {
      const box = el('input', { type: 'checkbox', 'data-column': c.key }) as HTMLInputElement;
      box.checked = shown.has(c.key);
      box.addEventListener('change', () => {
        this.chosen.set(c.key, box.checked);
        this.renderTable();
      });
      const label = el('label', { class: 'zs-column-choice', 'data-column': c.key }, box, c.label);
      if (c.empty) {
        label.classList.add('zs-column-empty');
        label.title = 'No candidate has a value here yet (hidden until you choose it)';
        label.appendChild(el('span', { class: 'zs-muted' }, ' (empty)'));
      }
      list.appendChild(label);
    }
    this.chooser.appendChild(list);
  }

  private renderTable(): void {
    const cols = visibleColumns(this.columns, this.chosen);
    const rows = viewRows(this.rows, this.filter, this.sort);
    this.count.textContent = `${rows.length} of ${this.rows.length} candidates`;
    const headRow = el('tr');
    for (const c of cols) {
      const sorted = this.sort?.key === c.key ? this.sort.direction : null;
      const th = el(
        'th',
        {
          class: `zs-sortable zs-col-${c.kind}`,
          'data-column': c.key,
          'aria-sort': sorted === 'asc' ? 'ascending' : sorted === 'desc' ? 'descending' : 'none',
          title: c.help ? `${c.label}: ${c.help}. Click to sort.` : `Sort by ${c.label}`
        },
        c.label,
        sorted ? (sorted === 'asc' ? ' ▲' : ' ▼') : ''
      );
      th.addEventListener('click', () => {
        this.sort = nextSort(this.sort, c.key);
        this.renderTable();
      });
      headRow.appendChild(th);
    }
    const tbody = el('tbody');
    for (const r of rows) {
      const tr = el('tr', { class: 'zs-row', 'data-candidate': r.candidate_id });
      if (r.adopted) tr.classList.add('zs-adopted');
      if (r.status !== 'ok') tr.classList.add('zs-not-ok');
      for (const c of cols) {
        tr.appendChild(el('td', { class: `zs-col-${c.kind}` }, formatCell(cell(r, c.key))));
      }
      tr.addEventListener('click', () => this.onRowClick(r.candidate_id));
      tbody.appendChild(tr);
    }
    const table = el('table', { class: 'zs-table' }, el('thead', {}, headRow), tbody);
    const { scrollLeft, scrollTop } = this.tableHost;
    clear(this.tableHost);
    this.tableHost.appendChild(table);
    this.tableHost.scrollLeft = scrollLeft;
    this.tableHost.scrollTop = scrollTop;
  }
}
