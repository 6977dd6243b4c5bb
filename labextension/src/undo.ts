/**
 * "Undo Last Instruction": a command and a notebook toolbar button that run the
 * kernel's own undo command (`%undo` in the Open Interpreter kernel, `%oi undo`
 * under `%%oi`) without adding a cell, and show its answer (what was rolled
 * back and what could not be) as a notification.
 */

import {
  Dialog,
  Notification,
  ToolbarButton,
  showDialog
} from '@jupyterlab/apputils';
import type { KernelMessage } from '@jupyterlab/services';
import { undoIcon } from '@jupyterlab/ui-components';

import { OIConnection } from './connection';
import { replyText, undoCode, undoSummary } from './rollback';
import { kernelToolbarButton } from './widgets';

export const UNDO_COMMAND = 'oi-kernel:undo-last';
export const UNDO_TOOLBAR_ITEM = 'oi-kernel-undo';

/** Run the undo in the notebook's kernel; resolves with the kernel's answer. */
export async function undoLast(connection: OIConnection): Promise<string> {
  const kernel = connection.panel.sessionContext.session?.kernel;
  if (!kernel) {
    throw new Error('The notebook has no running kernel.');
  }
  const messages: KernelMessage.IIOPubMessage[] = [];
  const future = kernel.requestExecute({
    code: undoCode(connection.status?.kernel),
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
    throw new Error(text || 'The undo failed.');
  }
  return text;
}

/** Undo and tell the user what happened. */
export async function undoAndNotify(connection: OIConnection): Promise<void> {
  try {
    const text = (await undoLast(connection)) || 'Undone.';
    const { short, warn } = undoSummary(text);
    const details = {
      label: 'Details',
      callback: () =>
        void showDialog({
          title: 'Undo last instruction',
          body: text,
          buttons: [Dialog.okButton()]
        })
    };
    (warn ? Notification.warning : Notification.info)(short, {
      autoClose: warn ? false : 10000,
      actions: [details]
    });
  } catch (error) {
    Notification.error(String((error as Error).message ?? error), {
      autoClose: false
    });
  }
}

/** The toolbar button, shown only on notebooks whose kernel speaks to us. */
export function undoButton(
  connection: OIConnection,
  onClick: () => void
): ToolbarButton {
  return kernelToolbarButton(connection, {
    icon: undoIcon,
    label: 'Undo',
    tooltip:
      'Undo the last instruction: forget it and roll back the variables and files its code changed (Open Interpreter)',
    className: 'oi-UndoButton',
    onClick
  });
}
