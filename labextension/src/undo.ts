/**
 * "Undo Last Instruction": a command and a notebook toolbar button that run the
 * kernel's own undo command (`%undo` in the Open Interpreter kernel, `%oi undo`
 * under `%%oi`) without adding a cell, and show its answer (what was rolled
 * back and what could not be) as a notification.
 */

import { ToolbarButton } from '@jupyterlab/apputils';
import { undoIcon } from '@jupyterlab/ui-components';

import { OIConnection } from './connection';
import {
  IKernelAction,
  notifyAnswer,
  notifyFailure,
  runInKernel
} from './kernelaction';
import { undoCode, undoSummary } from './rollback';
import { kernelToolbarButton } from './widgets';

export const UNDO_COMMAND = 'oi-kernel:undo-last';
export const UNDO_TOOLBAR_ITEM = 'oi-kernel-undo';

/** Run the undo in the notebook's kernel; resolves with the kernel's answer. */
export function undoLast(connection: OIConnection): Promise<string> {
  return runInKernel(
    connection,
    undoCode(connection.status?.kernel),
    'The undo failed.'
  );
}

/** Undo and tell the user what happened. */
export async function undoAndNotify(connection: OIConnection): Promise<void> {
  try {
    const text = (await undoLast(connection)) || 'Undone.';
    notifyAnswer(text, undoSummary(text), 'Undo last instruction');
  } catch (error) {
    notifyFailure(error);
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

/** The command, its palette entry and the toolbar button (`addKernelAction`). */
export const UNDO_ACTION: IKernelAction = {
  command: UNDO_COMMAND,
  toolbarItem: UNDO_TOOLBAR_ITEM,
  label: 'Undo Last Instruction',
  caption:
    'Forget the last instruction and roll back the variables and files its code changed',
  run: undoAndNotify,
  button: undoButton
};
