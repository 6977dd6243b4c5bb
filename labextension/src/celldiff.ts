/**
 * Pure helpers of the cell-edit review (celledits.ts): a line diff, and
 * reading the kernel's `application/vnd.oi.cell-edit+json` proposals and
 * `cell_edit_state` messages.
 */

export const CELL_EDIT_MIME = 'application/vnd.oi.cell-edit+json';

/** One line of a diff: kept (' '), removed ('-') or added ('+'). */
export interface IDiffLine {
  kind: ' ' | '-' | '+';
  text: string;
}

/** One proposed edit: `cell` is an In [n] number ("3") or a cell id. */
export interface IProposedEdit {
  key: string;
  cell: string;
  new_source: string;
}

export interface IProposal {
  proposal: string;
  turn: number;
  edits: IProposedEdit[];
}

export type EditAction =
  | 'accepted'
  | 'rejected'
  | 'refused'
  | 'missing'
  | 'not_applied';

export interface IEditState {
  proposal: string;
  open: boolean;
  decided: Record<string, { action: EditAction; by: string }>;
}

const MAX_CELLS = 4_000_000; // lines x lines beyond which the diff is coarse

/** The lines of `before` and `after` as a line diff (longest common subsequence). */
export function lineDiff(before: string, after: string): IDiffLine[] {
  const a = before === '' ? [] : before.split('\n');
  const b = after === '' ? [] : after.split('\n');
  if (a.length * b.length > MAX_CELLS) {
    return [
      ...a.map(text => ({ kind: '-' as const, text })),
      ...b.map(text => ({ kind: '+' as const, text }))
    ];
  }
  const table = lcsTable(a, b);
  const out: IDiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ kind: ' ', text: a[i] });
      i++;
      j++;
    } else if (j < b.length && (i >= a.length || table[i][j + 1] >= table[i + 1][j])) {
      out.push({ kind: '+', text: b[j] });
      j++;
    } else {
      out.push({ kind: '-', text: a[i] });
      i++;
    }
  }
  return reorder(out);
}

/** table[i][j]: the longest common subsequence of a[i:] and b[j:]. */
function lcsTable(a: string[], b: string[]): number[][] {
  const table: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    table.push(new Array<number>(b.length + 1).fill(0));
  }
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] =
        a[i] === b[j]
          ? table[i + 1][j + 1] + 1
          : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  return table;
}

/** In each run of changes, removed lines first, then added ones (as diff -u shows). */
function reorder(lines: IDiffLine[]): IDiffLine[] {
  const out: IDiffLine[] = [];
  let removed: IDiffLine[] = [];
  let added: IDiffLine[] = [];
  const flush = (): void => {
    out.push(...removed, ...added);
    removed = [];
    added = [];
  };
  for (const line of lines) {
    if (line.kind === ' ') {
      flush();
      out.push(line);
    } else {
      (line.kind === '-' ? removed : added).push(line);
    }
  }
  flush();
  return out;
}

/** Side by side: rows of (left, right), a change's removed and added lines paired. */
export function sideBySide(
  lines: IDiffLine[]
): [IDiffLine | null, IDiffLine | null][] {
  const rows: [IDiffLine | null, IDiffLine | null][] = [];
  let k = 0;
  while (k < lines.length) {
    if (lines[k].kind === ' ') {
      rows.push([lines[k], lines[k]]);
      k++;
      continue;
    }
    const removed: IDiffLine[] = [];
    const added: IDiffLine[] = [];
    while (k < lines.length && lines[k].kind !== ' ') {
      (lines[k].kind === '-' ? removed : added).push(lines[k]);
      k++;
    }
    for (let n = 0; n < Math.max(removed.length, added.length); n++) {
      rows.push([removed[n] ?? null, added[n] ?? null]);
    }
  }
  return rows;
}

/** "In[3]" for an In [n] number, else the cell id. */
export function cellLabel(cell: string): string {
  return /^\d+$/.test(cell) ? `In[${cell}]` : `id ${cell}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The proposal in a display's data, or null when it is malformed. */
export function parseProposal(data: unknown): IProposal | null {
  if (!isObject(data) || typeof data.proposal !== 'string') {
    return null;
  }
  const edits: IProposedEdit[] = [];
  for (const e of Array.isArray(data.edits) ? data.edits : []) {
    if (
      isObject(e) &&
      typeof e.key === 'string' &&
      typeof e.cell === 'string' &&
      typeof e.new_source === 'string'
    ) {
      edits.push({ key: e.key, cell: e.cell, new_source: e.new_source });
    }
  }
  const turn = typeof data.turn === 'number' ? data.turn : 0;
  return edits.length ? { proposal: data.proposal, turn, edits } : null;
}

/** A `cell_edit_state` message, or null for any other message. */
export function parseEditState(data: unknown): IEditState | null {
  if (
    !isObject(data) ||
    data.type !== 'cell_edit_state' ||
    typeof data.proposal !== 'string'
  ) {
    return null;
  }
  const decided: IEditState['decided'] = {};
  if (isObject(data.decided)) {
    for (const [key, value] of Object.entries(data.decided)) {
      if (isObject(value) && typeof value.action === 'string') {
        decided[key] = {
          action: value.action as EditAction,
          by: typeof value.by === 'string' ? value.by : ''
        };
      }
    }
  }
  return { proposal: data.proposal, open: data.open === true, decided };
}
