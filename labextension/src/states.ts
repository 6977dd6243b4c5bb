/**
 * "States": a notebook toolbar button beside Undo that opens the session's named
 * states as a tree (the kernel's own `%states`), with Save, Restore and Drop.
 * Each action runs the kernel's command (`%state save NAME`, `%oi state ...`
 * under `%%oi`) without adding a cell; its answer is shown as a notification.
 */

import { Dialog } from '@jupyterlab/apputils';
import { historyIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { OIConnection } from './connection';
import {
  IKernelAction,
  notifyAnswer,
  notifyFailure,
  runInKernel
} from './kernelaction';
import { clip } from './rollback';
import { IStateRow, parseStates, statesPrefix } from './statestext';
import { kernelToolbarButton } from './widgets';

export const STATES_COMMAND = 'oi-kernel:states';
export const STATES_TOOLBAR_ITEM = 'oi-kernel-states';

/** Run one command line in the notebook's kernel; its answer as text. */
export function runLine(connection: OIConnection, line: string): Promise<string> {
  return runInKernel(
    connection,
    statesPrefix(connection.status?.kernel) + line,
    `${line} failed.`
  );
}

type Action = { verb: 'save' | 'restore' | 'drop'; name: string } | null;

/** The dialog's body: a name to save under, and the tree with its buttons. */
class StatesBody extends Widget {
  action: Action = null;
  private input: HTMLInputElement;

  constructor(rows: IStateRow[], choose: () => void) {
    super();
    this.addClass('oi-StatesPanel');
    const save = document.createElement('div');
    save.className = 'oi-StatesSave';
    this.input = document.createElement('input');
    this.input.placeholder = 'name, e.g. before-log-scale';
    this.input.className = 'jp-mod-styled oi-StatesName';
    save.append(this.input, this.button('Save state', 'oi-StatesSaveButton', () => {
      this.action = { verb: 'save', name: this.input.value.trim() };
      choose();
    }));
    this.node.append(save);
    const list = document.createElement('ul');
    list.className = 'oi-StatesTree';
    if (rows.length === 0) {
      list.textContent = 'No named states yet.';
    }
    for (const row of rows) {
      list.append(this.row(row, choose));
    }
    this.node.append(list);
  }

  private row(row: IStateRow, choose: () => void): HTMLLIElement {
    const item = document.createElement('li');
    item.className = 'oi-StatesRow' + (row.current ? ' oi-mod-current' : '');
    item.style.paddingLeft = `${row.depth * 1.5}em`;
    item.dataset.name = row.name;
    const label = document.createElement('span');
    label.className = 'oi-StatesLabel';
    label.textContent = `${row.name}${row.current ? ' ← you are here' : ''}`;
    label.title = row.details;
    const details = document.createElement('span');
    details.className = 'oi-StatesDetails';
    details.textContent = row.details;
    const pick = (verb: 'restore' | 'drop') => () => {
      this.action = { verb, name: row.name };
      choose();
    };
    item.append(
      label,
      this.button('Restore', 'oi-StatesRestore', pick('restore')),
      this.button('Drop', 'oi-StatesDrop', pick('drop')),
      details
    );
    return item;
  }

  private button(text: string, cls: string, click: () => void): HTMLElement {
    const button = document.createElement('button');
    button.className = `jp-mod-styled jp-mod-accept ${cls}`;
    button.textContent = text;
    button.addEventListener('click', click);
    return button;
  }

}

/** Show the states; run what the user picks and say what it did. */
export async function showStates(connection: OIConnection): Promise<void> {
  try {
    const rows = parseStates(await runLine(connection, 'states'));
    const body = new StatesBody(rows, () => dialog.resolve(0));
    const dialog = new Dialog<Action>({
      title: 'Named states',
      body,
      buttons: [Dialog.cancelButton({ label: 'Close' })]
    });
    await dialog.launch();
    const action = body.action; // (a closing button returns no value: the body keeps it)
    if (!action || !action.name) {
      return;
    }
    const text = await runLine(connection, `state ${action.verb} ${action.name}`);
    notifyAnswer(
      text,
      { short: clip(text.split('\n')[0]), warn: /not restored/i.test(text) },
      `State ${action.name}`
    );
  } catch (error) {
    notifyFailure(error);
  }
}

/** The toolbar button, shown only on notebooks whose kernel speaks to us. */
export function statesButton(connection: OIConnection, onClick: () => void) {
  return kernelToolbarButton(connection, {
    icon: historyIcon,
    label: 'States',
    tooltip:
      'Named states: save the variables and files, go back to one (Open Interpreter)',
    className: 'oi-StatesButton',
    onClick
  });
}

/** The command, its palette entry and the toolbar button beside Undo (`addKernelAction`). */
export const STATES_ACTION: IKernelAction = {
  command: STATES_COMMAND,
  toolbarItem: STATES_TOOLBAR_ITEM,
  label: 'Named States…',
  caption: 'Save the variables and files as a named state, or go back to one',
  run: showStates,
  button: statesButton
};
