/**
 * The shared approval card: a renderer for the kernel's card mime type, so
 * every view of a notebook (each collaborator's, a reloaded one) shows the
 * pending card with its code, flags and buttons, and turns it into the
 * decided record when anyone decides.
 *
 * What is shown comes from the kernel (`card_state`), never from the notebook
 * document: in a shared notebook anyone may edit outputs, and the code a
 * collaborator approves must be the code that runs. The kernel-made HTML
 * (header, flags, visible-characters view, record) goes through JupyterLab's
 * sanitizer. The DOM keeps the card's contract (`oi-card oi-card-pending`,
 * `button.oi-run`..., `.oi-code textarea`) so the approval shortcuts work.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { CARD, CARD_ACTIONS } from './cards';
import { OIConnection } from './connection';
import { CARD_MIME, CardAction, ICardEvent, ICardInfo } from './protocol';

/** Finds the connection of the notebook a rendered node sits in. */
export type ConnectionFinder = (node: HTMLElement) => OIConnection | null;

/** Lower than ipywidgets' view (-10): JupyterLab prefers our card. */
export const CARD_RANK = -50;

export function cardRendererFactory(
  find: ConnectionFinder
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [CARD_MIME],
    defaultRank: CARD_RANK,
    createRenderer: options => new CardRenderer(options, find)
  };
}

const WAIT_TRIES = 150; // x 200 ms: the view attaches and its comm opens

export class CardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly _options: IRenderMime.IRendererOptions,
    private readonly _find: ConnectionFinder
  ) {
    super();
    this.addClass('oi-SharedCard');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[CARD_MIME] as { card?: unknown; step?: unknown };
    this._card = typeof data?.card === 'string' ? data.card : '';
    const step = typeof data?.step === 'number' ? data.step : 0;
    this._say(`Approval card for step ${step}: asking the kernel…`);
    if (this._card && !this._started) {
      this._started = true;
      void this._connect(0);
    }
  }

  dispose(): void {
    if (this._connection) {
      this._connection.cardDecided.disconnect(this._onDecided, this);
      this._connection.statusChanged.disconnect(this._onStatus, this);
    }
    super.dispose();
  }

  private async _connect(tries: number): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    const connection = this._find(this.node);
    if (!connection || !connection.available) {
      if (tries >= WAIT_TRIES) {
        this._say(
          'This approval card waits for the Open Interpreter kernel, which does not answer (it stopped, or this notebook is not connected to it).'
        );
        return;
      }
      setTimeout(() => void this._connect(tries + 1), 200);
      return;
    }
    if (this._connection !== connection) {
      this._connection = connection;
      connection.cardDecided.connect(this._onDecided, this);
      connection.statusChanged.connect(this._onStatus, this);
    }
    await this._refresh();
  }

  private async _refresh(): Promise<void> {
    const connection = this._connection;
    if (!connection) {
      return;
    }
    try {
      this._show(await connection.cardState(this._card));
    } catch (err) {
      this._say(`Cannot reach the kernel for this approval card: ${err}`);
    }
  }

  /** The comm came back (restart, reconnect): ask again. */
  private _onStatus(_: OIConnection, status: unknown): void {
    if (status && this._state !== 'decided') {
      void this._refresh();
    }
  }

  private _onDecided(_: OIConnection, event: ICardEvent): void {
    if (event.card === this._card) {
      this._show(event);
    }
  }

  private _show(info: ICardInfo): void {
    if (info.state === 'pending') {
      if (this._state !== 'pending') {
        this._renderPending(info);
      } else if (this._preview) {
        this._html(this._preview, info.preview_html ?? ''); // a preview arrived
      }
    } else if (info.state === 'decided') {
      this._renderDecided(info);
    } else {
      this._say(
        'This approval card is no longer pending: the kernel does not know it (it restarted, or the step ended without a record here).'
      );
    }
    this._state = info.state;
  }

  private _html(into: HTMLElement, html: string): void {
    // Kernel-made HTML, escaped there; sanitized here like any output.
    into.innerHTML = this._options.sanitizer.sanitize(html);
  }

  private _say(text: string): void {
    this.node.textContent = '';
    const note = document.createElement('div');
    note.className = 'oi-SharedCard-note';
    note.textContent = text;
    this.node.appendChild(note);
  }

  private _renderDecided(info: ICardInfo): void {
    this.node.textContent = '';
    const record = document.createElement('div');
    this._html(record, info.html);
    this.node.appendChild(record);
  }

  private _renderPending(info: ICardInfo): void {
    this.node.textContent = '';
    const root = document.createElement('div');
    root.className = `${CARD.root} ${CARD.pending} oi-card-shared`;
    root.dataset.card = info.card;

    const head = document.createElement('div');
    head.className = 'oi-card-head';
    this._html(head, info.header_html);
    root.appendChild(head);

    if (info.visible_html) {
      const marked = document.createElement('div');
      this._html(marked, info.visible_html);
      root.appendChild(marked);
    }

    const codeBox = document.createElement('div');
    codeBox.className = 'oi-code';
    const code = document.createElement('textarea');
    code.value = info.code;
    code.readOnly = true;
    code.spellcheck = false;
    code.rows = Math.min(info.code.split('\n').length + 1, 24);
    codeBox.appendChild(code);
    if (info.visible_html) {
      codeBox.style.display = 'none'; // a textarea would show it reordered
    }
    root.appendChild(codeBox);

    const preview = document.createElement('div');
    preview.className = 'oi-preview-area';
    this._html(preview, info.preview_html ?? '');
    root.appendChild(preview);
    this._preview = preview;

    const bar = document.createElement('div');
    bar.className = 'oi-card-buttons';
    const reason = document.createElement('input');
    reason.type = 'text';
    reason.placeholder = 'why skip? (optional, told to the model)';
    const edited = (): string | undefined =>
      !code.readOnly && code.value !== info.code ? code.value : undefined;
    const send = (action: CardAction): void =>
      void this._decide(action, reason.value, edited());
    const buttons: [string, string, string, string, () => void][] = [
      ['Run', CARD_ACTIONS.run, 'mod-success', 'Run this code', () => send('run')],
      [
        'Edit',
        CARD_ACTIONS.edit,
        '',
        'Edit the code, then Run',
        () => {
          code.readOnly = false;
          codeBox.style.display = '';
          code.focus();
        }
      ],
      [
        'Preview',
        'oi-preview',
        '',
        info.preview === 'unavailable'
          ? `Preview is not available: ${info.preview_why ?? ''}`
          : 'Run it in a disposable copy first: see its output and what it would change',
        () => send('preview')
      ],
      ['Skip', CARD_ACTIONS.skip, 'mod-warning', 'Do not run; tell the model', () => send('skip')],
      [
        'Run all',
        CARD_ACTIONS.runAll,
        'mod-info',
        "Run this and the rest of this instruction's steps",
        () => send('run_all')
      ],
      ['Stop', CARD_ACTIONS.stop, 'mod-danger', 'Stop this instruction', () => send('stop')]
    ];
    for (const [label, cls, style, tip, onClick] of buttons) {
      if (cls === CARD_ACTIONS.runAll && !info.run_all) {
        continue;
      }
      if (cls === 'oi-preview' && !info.preview) {
        continue; // previews are off
      }
      const button = document.createElement('button');
      button.className = `jupyter-button ${cls} ${style}`.trim();
      button.textContent = label;
      button.title = tip;
      button.addEventListener('click', onClick);
      if (cls === 'oi-preview' && info.preview === 'unavailable') {
        button.disabled = true;
        button.dataset.off = '1'; // stays disabled
      }
      bar.appendChild(button);
    }
    bar.appendChild(reason);
    root.appendChild(bar);

    const fourEyes = document.createElement('div');
    fourEyes.className = 'oi-four-eyes';
    this._html(fourEyes, info.four_eyes_html);
    root.appendChild(fourEyes);

    const message = document.createElement('div');
    message.className = 'oi-card-message';
    root.appendChild(message);
    this._message = message;
    this._buttons = Array.from(bar.querySelectorAll('button'));
    this.node.appendChild(root);
  }

  private async _decide(
    action: CardAction,
    reason: string,
    code: string | undefined
  ): Promise<void> {
    const connection = this._connection;
    if (!connection) {
      return;
    }
    this._buttons.forEach(b => (b.disabled = true));
    try {
      const reply = await connection.decide(this._card, action, reason, code);
      if (reply.ok) {
        return; // the `card` event turns this view into the record
      }
      this._tell(reply.error, reply.refused);
      if (reply.state === 'decided') {
        this._renderDecided(reply);
        this._state = 'decided';
      }
    } catch (err) {
      this._tell(`The decision did not reach the kernel: ${err}`, true);
    } finally {
      this._buttons.forEach(b => (b.disabled = b.dataset.off === '1'));
    }
  }

  private _tell(text: string, refused: boolean): void {
    if (this._message) {
      this._message.textContent = text;
      this._message.classList.toggle('oi-four-eyes-refused', refused);
    }
  }

  private _card = '';
  private _started = false;
  private _state = '';
  private _connection: OIConnection | null = null;
  private _message: HTMLElement | null = null;
  private _preview: HTMLElement | null = null;
  private _buttons: HTMLButtonElement[] = [];
}
