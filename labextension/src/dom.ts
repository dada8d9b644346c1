/**
 * Small DOM helpers. Text from the server is always set with textContent (never innerHTML).
 */

export type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else node.setAttribute(k, v);
  }
  append(node, ...children);
  return node;
}

export function append(node: HTMLElement, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}

export function clear(node: HTMLElement): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

/** A titled section with a heading. */
export function section(cls: string, title: string, ...children: Child[]): HTMLElement {
  return el('section', { class: `zs-section ${cls}` }, el('h3', { class: 'zs-section-title' }, title), ...children);
}

/** A definition list of label/value pairs. */
export function facts(pairs: [string, string][]): HTMLElement {
  const dl = el('dl', { class: 'zs-facts' });
  for (const [k, v] of pairs) {
    append(dl, el('dt', {}, k), el('dd', {}, v));
  }
  return dl;
}
