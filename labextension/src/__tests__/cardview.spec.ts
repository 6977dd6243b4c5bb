/**
 * @jest-environment jsdom
 */

import { Signal } from '@lumino/signaling';

import type { CardRenderer as Renderer } from '../cardview';
import { CARD_MIME, ICardInfo } from '../protocol';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) subclasses.
(globalThis as any).DragEvent ??= class DragEvent extends MouseEvent {};
declare const require: (id: string) => unknown;
const { CardRenderer } = require('../cardview') as typeof import('../cardview');

const CODE = "print('hi')";

function info(extra: Partial<ICardInfo> = {}): ICardInfo {
  return {
    card: 'c1',
    state: 'pending',
    step: 1,
    language: 'python',
    header_html: '<b>Step 1</b> · python',
    visible_html: '',
    code: CODE,
    run_all: true,
    four_eyes_html: '',
    label: '',
    by: '',
    html: '',
    ...extra
  };
}

/** A stand-in for OIConnection: answers card_state, records decisions. */
class FakeConnection {
  available = true;
  decided: unknown[][] = [];
  state: ICardInfo = info();
  reply: Record<string, unknown> = { ok: true };
  cardDecided = new Signal<this, ICardInfo & { type: 'card' }>(this);
  statusChanged = new Signal<this, unknown>(this);

  async cardState(): Promise<ICardInfo> {
    return this.state;
  }

  async decide(...args: unknown[]): Promise<unknown> {
    this.decided.push(args);
    return { ...info(), ...this.reply };
  }
}

const flush = () => new Promise(resolve => setTimeout(resolve, 0));

async function render(connection: FakeConnection): Promise<Renderer> {
  const options = {
    sanitizer: { sanitize: (html: string) => html },
    mimeType: CARD_MIME
  } as any;
  const renderer = new CardRenderer(options, () => connection as any);
  await renderer.renderModel({
    data: { [CARD_MIME]: { card: 'c1', step: 1 } }
  } as any);
  await flush();
  await flush();
  return renderer;
}

function button(renderer: Renderer, cls: string): HTMLButtonElement {
  return renderer.node.querySelector(`button.${cls}`) as HTMLButtonElement;
}

describe('the shared approval card', () => {
  it('shows the code the kernel sent, its header and the buttons', async () => {
    const connection = new FakeConnection();
    connection.state = info({ run_all: false });
    const renderer = await render(connection);
    const card = renderer.node.querySelector('.oi-card.oi-card-pending');
    expect(card).not.toBeNull();
    expect(
      renderer.node.querySelector<HTMLTextAreaElement>('.oi-code textarea')!.value
    ).toBe(CODE);
    expect(renderer.node.querySelector('.oi-card-head')!.innerHTML).toContain(
      '<b>Step 1</b>'
    );
    expect(button(renderer, 'oi-run')).not.toBeNull();
    expect(button(renderer, 'oi-run-all')).toBeNull(); // not allowed here
  });

  it('sends Run without code, and an edit with its code', async () => {
    const connection = new FakeConnection();
    const renderer = await render(connection);
    button(renderer, 'oi-run').click();
    await flush();
    expect(connection.decided[0]).toEqual(['c1', 'run', '', undefined]);
    button(renderer, 'oi-edit').click();
    const area =
      renderer.node.querySelector<HTMLTextAreaElement>('.oi-code textarea')!;
    area.value = "print('edited')";
    button(renderer, 'oi-run').click();
    await flush();
    expect(connection.decided[1]).toEqual(['c1', 'run', '', "print('edited')"]);
  });

  it('says why a decision was refused and stays pending', async () => {
    const connection = new FakeConnection();
    connection.reply = { ok: false, refused: true, error: 'alice sent this' };
    const renderer = await render(connection);
    button(renderer, 'oi-run').click();
    await flush();
    const message = renderer.node.querySelector('.oi-card-message')!;
    expect(message.textContent).toBe('alice sent this');
    expect(message.classList.contains('oi-four-eyes-refused')).toBe(true);
    expect(renderer.node.querySelector('.oi-card-pending')).not.toBeNull();
  });

  it('turns into the record when anyone decides this card', async () => {
    const connection = new FakeConnection();
    const renderer = await render(connection);
    const record = '<div class="oi-card oi-card-decided">approved by bob</div>';
    connection.cardDecided.emit({
      ...info({ card: 'other', state: 'decided', html: 'x' }),
      type: 'card'
    });
    expect(renderer.node.querySelector('.oi-card-pending')).not.toBeNull();
    connection.cardDecided.emit({
      ...info({ state: 'decided', html: record, by: 'bob' }),
      type: 'card'
    });
    expect(renderer.node.querySelector('.oi-card-pending')).toBeNull();
    expect(renderer.node.textContent).toContain('approved by bob');
  });

  it('a card the kernel does not know shows no buttons', async () => {
    const connection = new FakeConnection();
    connection.state = info({ state: 'unknown' });
    const renderer = await render(connection);
    expect(renderer.node.querySelector('button')).toBeNull();
    expect(renderer.node.textContent).toContain('no longer pending');
  });
});
