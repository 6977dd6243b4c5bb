/**
 * What the Undo and States buttons share: a command line run in the notebook's
 * kernel without adding a cell (its answer as text), that answer shown as a
 * notification with a Details dialog, and the wiring of a command, its palette
 * entry and its notebook toolbar button.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  Dialog,
  ICommandPalette,
  IToolbarWidgetRegistry,
  Notification,
  ToolbarButton,
  showDialog
} from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { KernelMessage } from '@jupyterlab/services';

import { OIConnection } from './connection';
import { ConnectionManager } from './manager';
import { replyText } from './rollback';

export const PALETTE_CATEGORY = 'Open Interpreter';

/**
 * Run `code` in the notebook's kernel (no cell, no history); resolves with the
 * kernel's answer as text, rejects with it (or `failure`) when it fails.
 */
export async function runInKernel(
  connection: OIConnection,
  code: string,
  failure: string
): Promise<string> {
  const kernel = connection.panel.sessionContext.session?.kernel;
  if (!kernel) {
    throw new Error('The notebook has no running kernel.');
  }
  const messages: KernelMessage.IIOPubMessage[] = [];
  const future = kernel.requestExecute({
    code,
    silent: false,
    store_history: false,
    allow_stdin: false
  });
  future.onIOPub = msg => {
    messages.push(msg);
  };
  const reply = await future.done;
  const text = replyText(messages);
  if (reply.content.status !== 'ok') {
    throw new Error(text || failure);
  }
  return text;
}

/** The kernel's answer: `short` as a notification, `text` behind its Details. */
export function notifyAnswer(
  text: string,
  summary: { short: string; warn: boolean },
  title: string
): void {
  const { short, warn } = summary;
  const details = {
    label: 'Details',
    callback: () =>
      void showDialog({ title, body: text, buttons: [Dialog.okButton()] })
  };
  (warn ? Notification.warning : Notification.info)(short, {
    autoClose: warn ? false : 10000,
    actions: [details]
  });
}

/** A failed action, as an error notification that stays until closed. */
export function notifyFailure(error: unknown): void {
  Notification.error(String((error as Error).message ?? error), {
    autoClose: false
  });
}

/** A command run on the current notebook's connection, and its toolbar button. */
export interface IKernelAction {
  command: string;
  toolbarItem: string;
  label: string;
  caption: string;
  run: (connection: OIConnection) => Promise<void>;
  button: (connection: OIConnection, onClick: () => void) => ToolbarButton;
}

/** Add `action`'s command, its palette entry and its notebook toolbar button. */
export function addKernelAction(
  app: JupyterFrontEnd,
  manager: ConnectionManager,
  tracker: INotebookTracker,
  palette: ICommandPalette | null,
  toolbarRegistry: IToolbarWidgetRegistry | null,
  action: IKernelAction
): void {
  const current = () =>
    manager.current?.available === true ? manager.current : null;
  app.commands.addCommand(action.command, {
    label: action.label,
    caption: action.caption,
    isEnabled: () => current() !== null,
    execute: () => {
      const connection = current();
      return connection ? action.run(connection) : undefined;
    }
  });
  manager.changed.connect(() =>
    app.commands.notifyCommandChanged(action.command)
  );
  palette?.addItem({ command: action.command, category: PALETTE_CATEGORY });
  addToolbarItem(tracker, toolbarRegistry, action.toolbarItem, panel => {
    const connection = manager.get(panel);
    return action.button(connection, () => {
      if (connection.available) {
        void action.run(connection);
      }
    });
  });
}

/**
 * A notebook toolbar item: through the toolbar registry (placed by the
 * "jupyter.lab.toolbars" entry of schema/plugin.json), else on each notebook.
 */
export function addToolbarItem(
  tracker: INotebookTracker,
  toolbarRegistry: IToolbarWidgetRegistry | null,
  name: string,
  create: (panel: NotebookPanel) => ToolbarButton
): void {
  if (toolbarRegistry) {
    toolbarRegistry.addFactory<NotebookPanel>('Notebook', name, create);
  } else {
    tracker.widgetAdded.connect((_, panel) => {
      panel.toolbar.addItem(name, create(panel));
    });
  }
}
