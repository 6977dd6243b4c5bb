/**
 * One notebook's `oi_kernel` comm: opening it when the kernel is ready (and
 * again after restarts, kernel changes and `%load_ext oi_kernel`), routing
 * the kernel's messages, and turning export/verify into promises.
 */

import { ISessionContext, Notification } from '@jupyterlab/apputils';
import { Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage as KM } from '@jupyterlab/services';
import { JSONObject, UUID } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import {
  COMM_TARGET,
  FrontendMessage,
  ICardEvent,
  ICardStateReply,
  ICodeRan,
  IDecideRequest,
  IDecideResult,
  IExportResult,
  IStatusMessage,
  IVerifyResult,
  ReplyMessage,
  helloMessage,
  parseKernelMessage,
  usesOiMagic
} from './protocol';

/** Kernel states in which an open comm is lost and must be reopened. */
const LOST_STATES: ReadonlySet<Kernel.Status> = new Set([
  'restarting',
  'autorestarting',
  'dead',
  'terminating'
]);

/** The part of `NotebookActions.executed` arguments used here. */
interface IExecutedArgs {
  notebook: Notebook;
  cell: { model: { sharedModel: { getSource(): string } } };
}

interface IPending {
  resolve: (reply: ReplyMessage) => void;
  reject: (reason: Error) => void;
}

/**
 * The comm link between one notebook panel and its kernel.
 *
 * `available` becomes true once the kernel has answered `hello` with a status
 * message, i.e. it is the Open Interpreter kernel or an IPython kernel with
 * `%load_ext oi_kernel` done.
 */
export class OIConnection implements IDisposable {
  /**
   * `userName` gives the name this browser's user decides under (JupyterLab's
   * identity); it becomes the `username` of every message this notebook's
   * kernel connection sends (JupyterLab 4 sends "" there).
   */
  constructor(
    readonly panel: NotebookPanel,
    readonly userName: () => string = () => ''
  ) {
    const ctx = panel.sessionContext;
    ctx.kernelChanged.connect(this._onKernelChanged, this);
    ctx.statusChanged.connect(this._onKernelStatus, this);
    NotebookActions.executed.connect(this._onExecuted, this);
    void ctx.ready.then(() => {
      if (!this._attempted) {
        this._wantOpen = true;
        this._tryOpen();
      }
    });
  }

  /** Emits every status message (the first one makes `available` true). */
  get statusChanged(): ISignal<this, IStatusMessage | null> {
    return this._statusChanged;
  }

  /** Emits every `code_ran` message. */
  get codeRan(): ISignal<this, ICodeRan> {
    return this._codeRan;
  }

  /** Emits when an approval card was decided (in any view). */
  get cardDecided(): ISignal<this, ICardEvent> {
    return this._cardDecided;
  }

  /** Emits the data of every message the kernel sends on this comm. */
  get messageReceived(): ISignal<this, JSONObject> {
    return this._messageReceived;
  }

  /** Send `data` to the kernel; false when the comm is not open. */
  send(data: JSONObject): boolean {
    if (!this._comm || this._comm.isDisposed || !this.available) {
      return false;
    }
    this._signMessages();
    this._comm.send(data);
    return true;
  }

  /** What the kernel says of approval card `card`. */
  cardState(card: string): Promise<ICardStateReply> {
    return this._request({
      type: 'card_state',
      request_id: UUID.uuid4(),
      card
    }) as Promise<ICardStateReply>;
  }

  /** Decide approval card `card` as this browser's user. */
  decide(
    card: string,
    action: IDecideRequest['action'],
    reason: string,
    code?: string
  ): Promise<IDecideResult> {
    this._signMessages();
    const msg: IDecideRequest = {
      type: 'decide',
      request_id: UUID.uuid4(),
      card,
      action,
      user: this.userName(),
      reason
    };
    if (code !== undefined) {
      msg.code = code;
    }
    return this._request(msg) as Promise<IDecideResult>;
  }

  /**
   * Put this user's name in the `username` of the kernel connection's messages
   * (execute requests, stdin answers, widget clicks, this comm), so the kernel
   * knows who decided. The connection keeps it in a private field: when a
   * JupyterLab version lacks it, `decide` still names the user in its data.
   */
  private _signMessages(): void {
    const kernel = this.panel.sessionContext.session?.kernel as unknown as
      | { _username?: unknown }
      | undefined;
    const name = this.userName();
    if (kernel && name && typeof kernel._username === 'string') {
      kernel._username = name;
    }
  }

  get available(): boolean {
    return this._status !== null;
  }

  /** The last status the kernel pushed, or null when not available. */
  get status(): IStatusMessage | null {
    return this._status;
  }

  /** Server path of the last successful export from this notebook. */
  lastExport = '';

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._closeComm(); // the kernel learns the notebook closed (waiting cell edits end)
    this._drop('notebook closed', false);
    NotebookActions.executed.disconnect(this._onExecuted, this);
    Signal.clearData(this);
  }

  /** Ask the kernel to re-send its status. */
  requestStatus(): void {
    this._send({ type: 'get_status' });
  }

  setModel(model: string): void {
    this._send({ type: 'set_model', model });
    this.requestStatus();
  }

  /** Export the session to `path` (relative to the notebook directory). */
  export(path: string, includeFailed: boolean): Promise<IExportResult> {
    const request_id = UUID.uuid4();
    return this._request({
      type: 'export',
      request_id,
      path,
      include_failed: includeFailed
    }) as Promise<IExportResult>;
  }

  /** Re-run an exported notebook and compare outputs. */
  verify(path: string): Promise<IVerifyResult> {
    const request_id = UUID.uuid4();
    return this._request({
      type: 'verify',
      request_id,
      path
    }) as Promise<IVerifyResult>;
  }

  private _request(
    msg: Extract<FrontendMessage, { request_id: string }>
  ): Promise<ReplyMessage> {
    return new Promise<ReplyMessage>((resolve, reject) => {
      if (!this._comm || !this.available) {
        reject(new Error('The kernel does not answer the oi_kernel comm.'));
        return;
      }
      this._pending.set(msg.request_id, { resolve, reject });
      this._send(msg);
    });
  }

  private _send(msg: FrontendMessage): void {
    if (this._comm && !this._comm.isDisposed) {
      this._comm.send(msg as unknown as JSONObject);
    }
  }

  private _tryOpen(): void {
    const kernel = this.panel.sessionContext.session?.kernel;
    if (
      this._isDisposed ||
      !this._wantOpen ||
      this._comm ||
      !kernel ||
      kernel.isDisposed ||
      LOST_STATES.has(kernel.status)
    ) {
      return;
    }
    this._wantOpen = false;
    this._attempted = true;
    this._signMessages();
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch (err) {
      console.warn('oi-kernel: cannot open comm', err);
      return;
    }
    this._comm = comm;
    comm.onMsg = msg => this._onMessage(comm, msg);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._drop('the kernel closed the oi_kernel comm', false);
      }
    };
    comm.open(helloMessage() as unknown as JSONObject).done.catch(() => {
      if (this._comm === comm) {
        this._drop('the kernel refused the oi_kernel comm', false);
      }
    });
  }

  private _onMessage(comm: Kernel.IComm, msg: KM.ICommMsgMsg): void {
    if (comm !== this._comm) {
      return;
    }
    this._messageReceived.emit(msg.content.data);
    const message = parseKernelMessage(msg.content.data);
    if (!message) {
      return;
    }
    switch (message.type) {
      case 'status':
        this._signMessages();
        this._status = message;
        this._statusChanged.emit(message);
        if (message.error) {
          Notification.error(message.error, { autoClose: 10000 });
        }
        break;
      case 'code_ran':
        this._codeRan.emit(message);
        break;
      case 'card':
        this._cardDecided.emit(message);
        break;
      default: {
        const pending = this._pending.get(message.request_id);
        if (pending) {
          this._pending.delete(message.request_id);
          pending.resolve(message);
        }
      }
    }
  }

  /** Close the comm with a comm_close (dispose alone tells the kernel nothing). */
  private _closeComm(): void {
    const comm = this._comm;
    if (comm && !comm.isDisposed) {
      comm.onClose = () => undefined;
      try {
        comm.close();
      } catch {
        // The kernel is already gone: nothing to tell it.
      }
    }
  }

  /** Forget the comm; reject pending requests; hide the UI. */
  private _drop(reason: string, reopen: boolean): void {
    const comm = this._comm;
    this._comm = null;
    if (comm && !comm.isDisposed) {
      comm.onClose = () => undefined;
      comm.onMsg = () => undefined;
      try {
        comm.dispose();
      } catch {
        // The kernel may already be gone; nothing left to release.
      }
    }
    for (const pending of this._pending.values()) {
      pending.reject(new Error(`Request abandoned: ${reason}.`));
    }
    this._pending.clear();
    this._wantOpen = reopen;
    if (this._status !== null) {
      this._status = null;
      if (!this._isDisposed) {
        this._statusChanged.emit(null);
      }
    }
  }

  private _onKernelChanged(
    _: ISessionContext,
    change: { newValue: Kernel.IKernelConnection | null }
  ): void {
    this._drop('the kernel changed', true);
    if (change.newValue) {
      this._tryOpen();
    }
  }

  private _onKernelStatus(_: ISessionContext, status: Kernel.Status): void {
    if (LOST_STATES.has(status)) {
      if (this._comm || this._status) {
        this._drop('the kernel restarted', true);
      }
      this._wantOpen = true;
    } else if (status === 'idle') {
      this._tryOpen();
    }
  }

  /** In a python3 notebook, retry once the magic has been loaded. */
  private _onExecuted(_: unknown, args: IExecutedArgs): void {
    if (args.notebook !== this.panel.content || this.available) {
      return;
    }
    if (usesOiMagic(args.cell.model.sharedModel.getSource())) {
      if (this._comm) {
        this._drop('retrying after %load_ext', true);
      }
      this._wantOpen = true;
      this._tryOpen();
    }
  }

  private _comm: Kernel.IComm | null = null;
  private _status: IStatusMessage | null = null;
  private _wantOpen = false;
  private _attempted = false;
  private _isDisposed = false;
  private _pending = new Map<string, IPending>();
  private _statusChanged = new Signal<this, IStatusMessage | null>(this);
  private _codeRan = new Signal<this, ICodeRan>(this);
  private _cardDecided = new Signal<this, ICardEvent>(this);
  private _messageReceived = new Signal<this, JSONObject>(this);
}
