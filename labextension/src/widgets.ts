/**
 * Small widgets: the status bar item, the notebook toolbar export button and
 * the verify report shown in a dialog. Plain DOM, no React.
 */

import { ToolbarButton, downloadIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { OIConnection } from './connection';
import {
  IStatusMessage,
  IVerifyResult,
  formatStatus,
  formatStatusTooltip,
  verifySummary
} from './protocol';

/** Status bar text for the current notebook's Open Interpreter session. */
export class StatusItem extends Widget {
  constructor(onClick: () => void) {
    super();
    this.addClass('oi-StatusItem');
    this.addClass('jp-StatusBar-TextItem');
    this.node.setAttribute('role', 'button');
    this.node.tabIndex = 0;
    this.node.addEventListener('click', onClick);
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        onClick();
      }
    });
  }

  showStatus(status: IStatusMessage | null): void {
    this.node.textContent = status ? formatStatus(status) : '';
    this.node.title = status ? formatStatusTooltip(status) : '';
  }
}

/**
 * A notebook toolbar button that is visible only while the notebook's kernel
 * answers the `oi_kernel` comm (the export and undo buttons).
 */
export function kernelToolbarButton(
  connection: OIConnection,
  options: ConstructorParameters<typeof ToolbarButton>[0]
): ToolbarButton {
  const button = new ToolbarButton(options);
  const sync = (): void => button.setHidden(!connection.available);
  sync();
  connection.statusChanged.connect(sync);
  button.disposed.connect(() => connection.statusChanged.disconnect(sync));
  return button;
}

/** The notebook toolbar's export button. */
export function exportButton(
  connection: OIConnection,
  onClick: () => void
): ToolbarButton {
  return kernelToolbarButton(connection, {
    icon: downloadIcon,
    label: 'Export',
    tooltip: 'Export as reproducible notebook (Open Interpreter)',
    className: 'oi-ExportButton',
    onClick
  });
}

/** Body of the verify dialog: summary, per-cell table, full text report. */
export function verifyReport(result: IVerifyResult): Widget {
  const widget = new Widget();
  widget.addClass('oi-VerifyReport');
  const node = widget.node;

  const summary = document.createElement('p');
  summary.className = 'oi-VerifyReport-summary';
  summary.textContent = verifySummary(result.cells);
  node.appendChild(summary);

  if (result.error) {
    const error = document.createElement('p');
    error.className = 'oi-VerifyReport-error';
    error.textContent = result.error;
    node.appendChild(error);
  }

  if (result.cells.length > 0) {
    node.appendChild(cellTable(result));
  }

  if (result.report) {
    const pre = document.createElement('pre');
    pre.className = 'oi-VerifyReport-text';
    pre.textContent = result.report;
    node.appendChild(pre);
  }
  return widget;
}

function cellTable(result: IVerifyResult): HTMLTableElement {
  const table = document.createElement('table');
  table.className = 'oi-VerifyReport-table';
  const head = table.createTHead().insertRow();
  for (const title of ['Cell', 'Result', 'Detail']) {
    const th = document.createElement('th');
    th.textContent = title;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const cell of result.cells) {
    const row = body.insertRow();
    row.className = `oi-VerifyReport-${cell.status}`;
    row.insertCell().textContent = String(cell.index);
    row.insertCell().textContent = cell.status;
    row.insertCell().textContent = cell.detail;
  }
  return table;
}
