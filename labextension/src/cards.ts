/**
 * Finding approval cards in rendered cell outputs.
 *
 * The kernel's approval card is an ipywidgets box; its DOM carries CSS
 * classes (set with `add_class` on the Python side) that this module relies
 * on. It only uses the DOM API, so it is tested with jsdom.
 */

import { ICodeBlock } from './protocol';

/** CSS classes of the approval card, shared with oi_kernel/approval.py. */
export const CARD = {
  root: 'oi-card',
  pending: 'oi-card-pending',
  decided: 'oi-card-decided',
  codeRan: 'oi-code-ran'
} as const;

/** The card actions, keyed by the CSS class of their button. */
export const CARD_ACTIONS = {
  run: 'oi-run',
  edit: 'oi-edit',
  skip: 'oi-skip',
  runAll: 'oi-run-all',
  stop: 'oi-stop'
} as const;

export type CardAction = keyof typeof CARD_ACTIONS;

const PENDING_SELECTOR = `.${CARD.root}.${CARD.pending}`;
const DECIDED_SELECTOR = `.${CARD.root}.${CARD.decided}`;

/** The first pending card inside `scope`, if any. */
export function findPendingCard(scope: ParentNode | null): HTMLElement | null {
  return scope?.querySelector<HTMLElement>(PENDING_SELECTOR) ?? null;
}

/**
 * The pending card to act on: the one in the active cell first, else the
 * first one anywhere in the notebook.
 */
export function pickPendingCard(
  activeCell: ParentNode | null,
  notebook: ParentNode | null
): HTMLElement | null {
  return findPendingCard(activeCell) ?? findPendingCard(notebook);
}

/**
 * The clickable element for `action` in `card`, or null when the card has no
 * such button or it is disabled. ipywidgets puts `_dom_classes` on the
 * `<button>` itself; a wrapper with the class is accepted too.
 */
export function findActionButton(
  card: HTMLElement,
  action: CardAction
): HTMLElement | null {
  const marked = card.querySelector<HTMLElement>(`.${CARD_ACTIONS[action]}`);
  if (!marked) {
    return null;
  }
  const button =
    marked.tagName === 'BUTTON'
      ? marked
      : (marked.querySelector<HTMLElement>('button') ?? marked);
  if ((button as HTMLButtonElement).disabled) {
    return null;
  }
  return button;
}

/** Click `action` on `card`; returns whether a button was clicked. */
export function clickCardAction(
  card: HTMLElement | null,
  action: CardAction
): boolean {
  const button = card ? findActionButton(card, action) : null;
  if (!button) {
    return false;
  }
  button.click();
  return true;
}

/** The code a decided card ran, or null if it ran nothing (e.g. skipped). */
export function ranCodeOf(card: Element): ICodeBlock | null {
  const pre = card.querySelector<HTMLElement>(`pre.${CARD.codeRan}`);
  if (!pre) {
    return null;
  }
  return {
    language: pre.dataset.language || 'python',
    code: pre.textContent ?? ''
  };
}

/** The decided card containing `node`, if `node` is inside one. */
export function enclosingDecidedCard(node: Element | null): Element | null {
  return node?.closest(DECIDED_SELECTOR) ?? null;
}

/** Code of every decided card in `scope` that ran something, in order. */
export function ranCodeIn(scope: ParentNode | null): ICodeBlock[] {
  if (!scope) {
    return [];
  }
  return Array.from(scope.querySelectorAll(DECIDED_SELECTOR))
    .map(ranCodeOf)
    .filter((c): c is ICodeBlock => c !== null && c.code.trim() !== '');
}
