/**
 * Inserting code the interpreter ran as real notebook code cells.
 */

import { Notebook } from '@jupyterlab/notebook';

import { OIConnection } from './connection';
import { ICodeRan, ICodeBlock, cellSourceFor } from './protocol';

/** Index of the cell whose model id is `id`, or -1. */
export function cellIndexById(notebook: Notebook, id: string): number {
  return notebook.widgets.findIndex(cell => cell.model.id === id);
}

/**
 * Insert one code cell per ran block right below cell `afterIndex`;
 * returns the new cells' ids. Non-Python code gets its cell magic line.
 */
export function insertCodeCells(
  notebook: Notebook,
  afterIndex: number,
  blocks: ICodeBlock[]
): string[] {
  const model = notebook.model;
  if (!model || blocks.length === 0) {
    return [];
  }
  const cells = blocks.map(block => ({
    cell_type: 'code',
    source: cellSourceFor(block.language, block.code),
    metadata: { tags: ['oi-generated'] }
  }));
  return model.sharedModel
    .insertCells(afterIndex + 1, cells)
    .map(cell => cell.id);
}

/**
 * Inserts `code_ran` pushes below the cell that produced them, keeping the
 * steps of one turn in order (step 2 goes below step 1's cell).
 */
export class AutoInserter {
  /** Insert `message` into `connection`'s notebook; returns the new id. */
  insert(connection: OIConnection, message: ICodeRan): string | null {
    const notebook = connection.panel.content;
    const origin = message.cell_id ?? notebook.activeCell?.model.id ?? null;
    if (origin === null) {
      return null;
    }
    const key = `${origin}\u0000${message.turn}`;
    const anchor = this._last.get(key) ?? origin;
    let index = cellIndexById(notebook, anchor);
    if (index < 0) {
      index = cellIndexById(notebook, origin);
    }
    if (index < 0) {
      index = notebook.activeCellIndex;
    }
    const [id] = insertCodeCells(notebook, index, [message]);
    if (id === undefined) {
      return null;
    }
    this._last.set(key, id);
    return id;
  }

  private _last = new Map<string, string>();
}
