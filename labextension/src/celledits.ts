/**
 * Edits to existing cells proposed by the model (`edit_cell`), reviewed per
 * cell: a renderer for the kernel's `application/vnd.oi.cell-edit+json`
 * display shows each edit as a diff (unified or side by side) against the
 * cell's source when the proposal was shown, with Accept / Accept and run /
 * Reject per cell and Accept all / Reject all.
 *
 * Accepting writes the new source through the cell's shared model, as one
 * undoable change (Ctrl+Z in the cell undoes it; in a shared notebook every
 * collaborator sees it), never by rewriting the file. A cell changed since
 * the proposal is not overwritten: the diff is shown again against its
 * current source, to accept again. Each decision goes to the kernel
 * (`cell_edit_decision`), which records it and tells the model.
 */

import { Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { JSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

import {
  CELL_EDIT_MIME,
  EditAction,
  IEditState,
  IProposal,
  IProposedEdit,
  cellLabel,
  lineDiff,
  parseEditState,
  parseProposal,
  sideBySide
} from './celldiff';
import { OIConnection } from './connection';

/** Finds the notebook panel, and its connection, a rendered node sits in. */
export type PanelFinder = (
  node: HTMLElement
) => { panel: NotebookPanel; connection: OIConnection } | null;

const WAIT_TRIES = 150; // x 200 ms: the view attaches and its comm opens

export function cellEditRendererFactory(
  find: PanelFinder
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [CELL_EDIT_MIME],
    defaultRank: -50,
    createRenderer: () => new CellEditRenderer(find)
  };
}

/** The notebook cell model, as far as an edit needs it. */
type CellModel = Notebook['widgets'][number]['model'];

interface IEditView {
  edit: IProposedEdit;
  cell: CellModel | null;
  base: string; // the source the diff compares with
  diff: HTMLElement;
  status: HTMLElement;
  buttons: HTMLButtonElement[];
  done: boolean;
}

/** The cell `ref` names: the code cell whose prompt is In [ref], or the cell with id `ref`. */
export function findCell(notebook: Notebook, ref: string): CellModel | null {
  const byCount = /^\d+$/.test(ref) ? Number(ref) : null;
  for (const widget of notebook.widgets) {
    const model = widget.model;
    const shared = model.sharedModel as { execution_count?: number | null };
    if (byCount !== null ? shared.execution_count === byCount : model.id === ref) {
      return model;
    }
  }
  return null;
}

/** "In[1], In[2], ..." of the notebook's code cells that ran (for an edit naming none). */
function knownCells(notebook: Notebook): string {
  const counts: string[] = [];
  for (const widget of notebook.widgets) {
    const count = (widget.model.sharedModel as { execution_count?: number | null })
      .execution_count;
    if (typeof count === 'number') {
      counts.push(`In[${count}]`);
    }
  }
  return counts.length
    ? `this notebook has ${counts.slice(-20).join(', ')}`
    : 'no cell of this notebook has run yet';
}

export class CellEditRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly _find: PanelFinder) {
    super();
    this.addClass('oi-CellEdits');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const proposal = parseProposal(model.data[CELL_EDIT_MIME]);
    if (!proposal) {
      this._say('A cell edit proposal that cannot be read.');
      return;
    }
    if (this._proposal?.proposal !== proposal.proposal) {
      this._proposal = proposal;
      this._say('Proposed cell edits: asking the kernel…');
      void this._connect(0);
    }
  }

  dispose(): void {
    this._connection?.messageReceived.disconnect(this._onMessage, this);
    super.dispose();
  }

  private async _connect(tries: number): Promise<void> {
    if (this.isDisposed || !this._proposal) {
      return;
    }
    const found = this._find(this.node);
    if (!found || !found.connection.available) {
      if (tries >= WAIT_TRIES) {
        this._say('These cell edits wait for the kernel, which does not answer.');
        return;
      }
      setTimeout(() => void this._connect(tries + 1), 200);
      return;
    }
    this._panel = found.panel;
    this._connection = found.connection;
    found.connection.messageReceived.connect(this._onMessage, this);
    found.connection.send({
      type: 'cell_edit_state',
      proposal: this._proposal.proposal
    });
  }

  private _onMessage(_: OIConnection, data: JSONObject): void {
    const state = parseEditState(data);
    if (!state || state.proposal !== this._proposal?.proposal) {
      return;
    }
    if (this._views.length === 0) {
      this._build(state);
    }
    this._apply(state);
  }

  private _say(text: string): void {
    this.node.textContent = '';
    const note = document.createElement('div');
    note.className = 'oi-CellEdits-note';
    note.textContent = text;
    this.node.appendChild(note);
  }

  // ------------------------------------------------------------ the card
  private _build(state: IEditState): void {
    const proposal = this._proposal as IProposal;
    const notebook = (this._panel as NotebookPanel).content;
    this.node.textContent = '';
    const n = proposal.edits.length;
    const head = document.createElement('div');
    head.className = 'oi-CellEdits-head';
    head.textContent = `The model proposes to change ${n} cell${n > 1 ? 's' : ''}.`;
    this.node.appendChild(head);
    this.node.appendChild(this._toolbar(n));
    for (const edit of proposal.edits) {
      const cell = findCell(notebook, edit.cell);
      const view = this._editView(edit, cell);
      this._views.push(view);
      if (!cell && state.open && !(edit.key in state.decided)) {
        this._decide(view, 'missing', false, knownCells(notebook));
      }
    }
  }

  private _toolbar(edits: number): HTMLElement {
    const bar = document.createElement('div');
    bar.className = 'oi-CellEdits-bar';
    this._reason.type = 'text';
    this._reason.placeholder = 'why reject? (optional, told to the model)';
    this._reason.className = 'oi-CellEdits-reason';
    const toggle = button('Side by side', 'oi-CellEdits-layout', () => {
      this._sideBySide = !this._sideBySide;
      toggle.textContent = this._sideBySide ? 'Unified' : 'Side by side';
      this._views.forEach(v => this._drawDiff(v));
    });
    bar.appendChild(toggle);
    if (edits > 1) {
      bar.appendChild(button('Accept all', 'oi-CellEdits-acceptAll', () => this._all(true)));
      bar.appendChild(button('Reject all', 'oi-CellEdits-rejectAll', () => this._all(false)));
    }
    bar.appendChild(this._reason);
    return bar;
  }

  private _editView(edit: IProposedEdit, cell: CellModel | null): IEditView {
    const box = document.createElement('div');
    box.className = 'oi-CellEdits-edit';
    box.dataset.cell = edit.cell;
    const title = document.createElement('div');
    title.className = 'oi-CellEdits-title';
    title.textContent = `Cell ${cellLabel(edit.cell)}`;
    const view: IEditView = {
      edit,
      cell,
      base: cell ? cell.sharedModel.getSource() : '',
      diff: document.createElement('div'),
      status: document.createElement('div'),
      buttons: [],
      done: false
    };
    view.status.className = 'oi-CellEdits-status';
    view.buttons = [
      button('Accept', 'oi-CellEdits-accept', () => this._accept(view, false)),
      button('Accept and run', 'oi-CellEdits-acceptRun', () => this._accept(view, true)),
      button('Reject', 'oi-CellEdits-reject', () =>
        this._decide(view, 'rejected', false, this._reason.value)
      )
    ];
    const buttons = document.createElement('div');
    buttons.className = 'oi-CellEdits-buttons';
    view.buttons.forEach(b => buttons.appendChild(b));
    box.append(title, view.diff, buttons, view.status);
    this.node.appendChild(box);
    this._drawDiff(view);
    return view;
  }

  private _drawDiff(view: IEditView): void {
    view.diff.textContent = '';
    view.diff.className = 'oi-CellEdits-diff';
    const lines = lineDiff(view.base, view.edit.new_source);
    if (this._sideBySide) {
      view.diff.appendChild(sideTable(sideBySide(lines)));
      return;
    }
    for (const line of lines) {
      view.diff.appendChild(lineNode(line.kind, line.text));
    }
  }

  // ------------------------------------------------------------ decisions
  private _all(accept: boolean): void {
    for (const view of this._views) {
      if (!view.done) {
        if (accept) {
          this._accept(view, false);
        } else {
          this._decide(view, 'rejected', false, this._reason.value);
        }
      }
    }
  }

  /** Write the new source (one undoable change), unless the cell changed since. */
  private _accept(view: IEditView, run: boolean): void {
    const notebook = (this._panel as NotebookPanel).content;
    const index = view.cell ? notebook.widgets.findIndex(w => w.model === view.cell) : -1;
    if (!view.cell || index < 0) {
      this._decide(view, 'missing', false, 'the cell was deleted after the proposal');
      return;
    }
    const current = view.cell.sharedModel.getSource();
    if (current !== view.base) {
      view.base = current;
      this._drawDiff(view);
      view.status.textContent =
        'This cell changed since the edit was proposed: the diff now compares with its current source. Accept again to apply it.';
      this._send(view, 'refused', false, 'the cell changed since the proposal');
      return;
    }
    const shared = view.cell.sharedModel as unknown as {
      undoManager?: { stopCapturing(): void } | null;
    };
    shared.undoManager?.stopCapturing(); // its own undo step, not merged with typing
    view.cell.sharedModel.setSource(view.edit.new_source);
    shared.undoManager?.stopCapturing();
    this._decide(view, 'accepted', run, '');
    if (run && this._panel) {
      notebook.deselectAll();
      notebook.activeCellIndex = index;
      void NotebookActions.run(notebook, this._panel.sessionContext);
    }
  }

  private _decide(view: IEditView, action: EditAction, ran: boolean, reason: string): void {
    if (view.done) {
      return;
    }
    view.done = true;
    this._show(view, action, '');
    if (ran) {
      view.status.textContent += ' It runs once the instruction has ended.';
    }
    this._send(view, action, ran, reason);
  }

  private _send(view: IEditView, action: EditAction, ran: boolean, reason: string): void {
    this._connection?.send({
      type: 'cell_edit_decision',
      proposal: (this._proposal as IProposal).proposal,
      key: view.edit.key,
      action,
      ran,
      reason,
      user: this._connection.userName()
    });
  }

  private _apply(state: IEditState): void {
    for (const view of this._views) {
      const decided = state.decided[view.edit.key];
      if (decided) {
        view.done = true;
        this._show(view, decided.action, decided.by);
      } else if (!state.open && !view.done) {
        view.done = true;
        view.buttons.forEach(b => (b.disabled = true));
        view.status.textContent = 'This proposal is closed: the edit was not applied.';
      }
    }
  }

  private _show(view: IEditView, action: EditAction, by: string): void {
    view.buttons.forEach(b => (b.disabled = true));
    const who = by ? ` by ${by}` : '';
    const texts: Record<EditAction, string> = {
      accepted: `Accepted${who}: the cell holds the new source (Ctrl+Z in the cell undoes it).`,
      rejected: `Rejected${who}: the cell is unchanged.`,
      refused: 'The cell changed since the proposal.',
      missing: `No such cell in this notebook: ${cellLabel(view.edit.cell)}.`,
      not_applied: 'Not applied.'
    };
    view.status.textContent = texts[action];
    view.status.dataset.action = action;
  }

  private _proposal: IProposal | null = null;
  private _panel: NotebookPanel | null = null;
  private _connection: OIConnection | null = null;
  private _views: IEditView[] = [];
  private _sideBySide = false;
  private _reason = document.createElement('input');
}

function button(label: string, cls: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement('button');
  b.className = `jp-Button jp-mod-styled ${cls}`;
  b.textContent = label;
  b.addEventListener('click', onClick);
  return b;
}

const KIND_CLASS: Record<string, string> = {
  ' ': 'oi-diff-same',
  '-': 'oi-diff-del',
  '+': 'oi-diff-add'
};

function lineNode(kind: string, text: string): HTMLElement {
  const line = document.createElement('div');
  line.className = `oi-diff-line ${KIND_CLASS[kind]}`;
  line.textContent = `${kind} ${text}`;
  return line;
}

function sideTable(
  rows: [{ kind: string; text: string } | null, { kind: string; text: string } | null][]
): HTMLElement {
  const table = document.createElement('table');
  table.className = 'oi-diff-side';
  for (const [left, right] of rows) {
    const tr = document.createElement('tr');
    for (const side of [left, right]) {
      const td = document.createElement('td');
      td.className = side ? `oi-diff-line ${KIND_CLASS[side.kind]}` : 'oi-diff-empty';
      td.textContent = side ? side.text : '';
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  return table;
}
