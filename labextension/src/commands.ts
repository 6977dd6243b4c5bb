/**
 * The extension's commands: export, verify, model picker, approval
 * shortcuts and "insert ran code as cells".
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  Dialog,
  InputDialog,
  Notification,
  showDialog,
  showErrorMessage
} from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { Notebook, NotebookPanel } from '@jupyterlab/notebook';

import {
  CardAction,
  clickCardAction,
  enclosingDecidedCard,
  pickPendingCard,
  ranCodeIn,
  ranCodeOf
} from './cards';
import { insertCodeCells } from './cells';
import { OIConnection } from './connection';
import { ConnectionManager } from './manager';
import {
  ICodeBlock,
  defaultExportPath,
  dirname,
  normalizePath,
  relativePath,
  resolveReportedPath
} from './protocol';
import { ISettings } from './settings';
import { verifyReport } from './widgets';

export namespace CommandIDs {
  export const exportNotebook = 'oi-kernel:export';
  export const verify = 'oi-kernel:verify';
  export const setModel = 'oi-kernel:set-model';
  export const approveRun = 'oi-kernel:approve-run';
  export const approveEdit = 'oi-kernel:approve-edit';
  export const approveSkip = 'oi-kernel:approve-skip';
  export const approveRunAll = 'oi-kernel:approve-run-all';
  export const approveStop = 'oi-kernel:approve-stop';
  export const insertCodeBelow = 'oi-kernel:insert-code-below';
}

export interface ICommandContext {
  app: JupyterFrontEnd;
  manager: ConnectionManager;
  settings: () => ISettings;
  docManager: IDocumentManager | null;
}

/** Register every command; returns nothing, the registry owns them. */
export function addCommands(ctx: ICommandContext): void {
  addSessionCommands(ctx);
  addApprovalCommands(ctx);
  addInsertCommand(ctx);
}

function currentAvailable(ctx: ICommandContext): OIConnection | null {
  const connection = ctx.manager.current;
  return connection?.available ? connection : null;
}

function addSessionCommands(ctx: ICommandContext): void {
  const { commands } = ctx.app;
  const isEnabled = (): boolean => currentAvailable(ctx) !== null;

  commands.addCommand(CommandIDs.exportNotebook, {
    label: 'Export as Reproducible Notebook…',
    caption:
      'Write the approved code of this Open Interpreter session as a plain notebook',
    isEnabled,
    execute: () => {
      const connection = currentAvailable(ctx);
      return connection ? exportNotebook(ctx, connection) : undefined;
    }
  });

  commands.addCommand(CommandIDs.verify, {
    label: 'Verify Exported Notebook…',
    caption: 'Re-run an exported notebook and compare its outputs',
    isEnabled,
    execute: () => {
      const connection = currentAvailable(ctx);
      return connection ? verifyNotebook(connection) : undefined;
    }
  });

  commands.addCommand(CommandIDs.setModel, {
    label: 'Change Open Interpreter Model…',
    isEnabled,
    execute: async () => {
      const connection = currentAvailable(ctx);
      if (!connection) {
        return;
      }
      const answer = await InputDialog.getText({
        title: 'Open Interpreter model',
        label: 'Model name (any litellm model id):',
        text: connection.status?.model ?? '',
        placeholder: 'e.g. gpt-4o-mini',
        okLabel: 'Use model'
      });
      const model = answer.value?.trim();
      if (answer.button.accept && model) {
        connection.setModel(model);
      }
    }
  });
}

function notebookDir(panel: NotebookPanel): string {
  return dirname(panel.context.localPath);
}

async function askPath(title: string, text: string, okLabel: string) {
  const answer = await InputDialog.getText({
    title,
    label: 'Path (relative to the Jupyter root):',
    text,
    okLabel
  });
  const value = answer.value?.trim();
  return answer.button.accept && value ? normalizePath(value) : null;
}

/** Export flow: ask for a path, export through the kernel, offer to open. */
export async function exportNotebook(
  ctx: ICommandContext,
  connection: OIConnection
): Promise<void> {
  const panel = connection.panel;
  const settings = ctx.settings();
  const target = await askPath(
    'Export as Reproducible Notebook',
    defaultExportPath(panel.context.localPath, settings.exportDefaultDirectory),
    'Export'
  );
  if (!target) {
    return;
  }
  const dir = notebookDir(panel);
  let result;
  try {
    result = await connection.export(
      relativePath(dir, target),
      settings.exportIncludeFailed
    );
  } catch (err) {
    await showErrorMessage('Export failed', err as Error);
    return;
  }
  if (!result.ok) {
    await showErrorMessage('Export failed', result.error || 'Unknown error');
    return;
  }
  const written = resolveReportedPath(dir, result.path, target);
  connection.lastExport = written;
  const choice = await showDialog({
    title: 'Export complete',
    body: `Wrote ${written}. It runs top to bottom in a plain Python kernel.`,
    buttons: [
      Dialog.cancelButton({ label: 'Close' }),
      Dialog.okButton({ label: 'Open' })
    ]
  });
  if (choice.button.accept) {
    openPath(ctx, written);
  }
}

function openPath(ctx: ICommandContext, path: string): void {
  if (ctx.docManager) {
    ctx.docManager.openOrReveal(path);
  } else {
    void ctx.app.commands.execute('docmanager:open', { path });
  }
}

/** Verify flow: ask for a path (default: last export), show the report. */
export async function verifyNotebook(connection: OIConnection): Promise<void> {
  const panel = connection.panel;
  const target = await askPath(
    'Verify Exported Notebook',
    connection.lastExport || defaultExportPath(panel.context.localPath),
    'Verify'
  );
  if (!target) {
    return;
  }
  const request = connection.verify(relativePath(notebookDir(panel), target));
  Notification.promise(
    request.then(result => result.ok),
    {
    pending: { message: `Verifying ${target}: re-running it…`, options: {} },
    success: {
        message: ok => (ok ? `${target} reproduces` : `${target} differs`),
        options: { autoClose: 3000 }
      },
    error: { message: () => `Could not verify ${target}` }
    }
  );
  let result;
  try {
    result = await request;
  } catch (err) {
    await showErrorMessage('Verify failed', err as Error);
    return;
  }
  if (!result.ok && result.cells.length === 0) {
    await showErrorMessage('Verify failed', result.error || 'Unknown error');
    return;
  }
  await showDialog({
    title: result.ok
      ? `Verified: ${target} reproduces`
      : `Verify: ${target} differs`,
    body: verifyReport(result),
    buttons: [Dialog.okButton({ label: 'Close' })]
  });
}

const APPROVALS: [string, CardAction, string][] = [
  [CommandIDs.approveRun, 'run', 'Approve and Run Pending Code'],
  [CommandIDs.approveEdit, 'edit', 'Edit Pending Code'],
  [CommandIDs.approveSkip, 'skip', 'Skip Pending Code'],
  [CommandIDs.approveRunAll, 'runAll', 'Run All Pending Code of This Turn'],
  [CommandIDs.approveStop, 'stop', 'Stop Open Interpreter Turn']
];

function addApprovalCommands(ctx: ICommandContext): void {
  const { commands } = ctx.app;
  for (const [id, action, label] of APPROVALS) {
    commands.addCommand(id, {
      label,
      caption: 'Acts on the pending approval card of the active cell',
      isEnabled: () => ctx.manager.tracker.currentWidget !== null,
      execute: () => {
        const notebook = ctx.manager.tracker.currentWidget?.content;
        if (!notebook) {
          return false;
        }
        const card = pickPendingCard(
          notebook.activeCell?.node ?? null,
          notebook.node
        );
        const clicked = clickCardAction(card, action);
        if (!clicked) {
          Notification.info(
            card
              ? `The pending card has no enabled "${action}" button.`
              : 'No code is waiting for approval in this notebook.',
            { autoClose: 2500 }
          );
        }
        return clicked;
      }
    });
  }
}

interface IInsertPlan {
  /** Index of the cell to insert below. */
  index: number;
  blocks: ICodeBlock[];
}

/**
 * From the context menu: the right-clicked card, below its own cell.
 * Otherwise: every ran card of the active cell, below the active cell.
 */
function planInsert(
  ctx: ICommandContext,
  notebook: Notebook,
  fromContextMenu: boolean
): IInsertPlan {
  if (fromContextMenu) {
    const hit = ctx.app.contextMenuHitTest(
      node => enclosingDecidedCard(node) !== null
    );
    const card = hit ? enclosingDecidedCard(hit) : null;
    const block = card ? ranCodeOf(card) : null;
    if (card && block) {
      const index = notebook.widgets.findIndex(c => c.node.contains(card));
      return {
        index: index >= 0 ? index : notebook.activeCellIndex,
        blocks: [block]
      };
    }
  }
  return {
    index: notebook.activeCellIndex,
    blocks: ranCodeIn(notebook.activeCell?.node ?? null)
  };
}

function addInsertCommand(ctx: ICommandContext): void {
  ctx.app.commands.addCommand(CommandIDs.insertCodeBelow, {
    label: 'Insert Ran Code as Cell Below',
    caption:
      'Copy the code Open Interpreter ran in this cell into real code cells',
    isEnabled: () => ctx.manager.tracker.currentWidget !== null,
    execute: args => {
      const notebook = ctx.manager.tracker.currentWidget?.content;
      if (!notebook) {
        return;
      }
      const plan = planInsert(ctx, notebook, args.fromContextMenu === true);
      if (plan.blocks.length === 0) {
        Notification.info('This cell has no code that Open Interpreter ran.', {
          autoClose: 2500
        });
        return;
      }
      insertCodeCells(notebook, plan.index, plan.blocks);
      notebook.activeCellIndex = plan.index + 1;
    }
  });
}
