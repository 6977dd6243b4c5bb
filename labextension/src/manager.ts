/**
 * Keeps one OIConnection per open notebook and says which one is current.
 */

import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { OIConnection } from './connection';
import { ICodeRan } from './protocol';

export interface ICodeRanArgs {
  connection: OIConnection;
  message: ICodeRan;
}

export class ConnectionManager implements IDisposable {
  constructor(
    readonly tracker: INotebookTracker,
    readonly userName: () => string = () => ''
  ) {
    tracker.widgetAdded.connect((_, panel) => void this._add(panel), this);
    tracker.currentChanged.connect(() => this._changed.emit(), this);
    tracker.forEach(panel => void this._add(panel));
  }

  /** Emits when the current notebook or any connection's status changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emits every `code_ran` message of every notebook. */
  get codeRan(): ISignal<this, ICodeRanArgs> {
    return this._codeRan;
  }

  /** The connection of the current notebook, available or not. */
  get current(): OIConnection | null {
    const panel = this.tracker.currentWidget;
    return panel ? (this._connections.get(panel) ?? null) : null;
  }

  /** The connection of `panel`, created on first use. */
  get(panel: NotebookPanel): OIConnection {
    return this._add(panel);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._connections.forEach(connection => connection.dispose());
    this._connections.clear();
    Signal.clearData(this);
  }

  private _add(panel: NotebookPanel): OIConnection {
    const existing = this._connections.get(panel);
    if (existing) {
      return existing;
    }
    const connection = new OIConnection(panel, this.userName);
    this._connections.set(panel, connection);
    connection.statusChanged.connect(() => this._changed.emit(), this);
    connection.codeRan.connect(
      (_, message) => this._codeRan.emit({ connection, message }),
      this
    );
    panel.disposed.connect(() => {
      this._connections.delete(panel);
      connection.dispose();
      this._changed.emit();
    }, this);
    return connection;
  }

  private _connections = new Map<NotebookPanel, OIConnection>();
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _codeRan = new Signal<this, ICodeRanArgs>(this);
}
