/**
 * @jest-environment jsdom
 */

import {
  clickCardAction,
  enclosingDecidedCard,
  findActionButton,
  pickPendingCard,
  ranCodeIn
} from '../cards';

/** A pending card as ipywidgets renders it: classes on the <button>s. */
function pendingCard(id: string): string {
  return `
    <div class="widget-vbox oi-card oi-card-pending" id="${id}">
      <div class="widget-hbox">
        <button class="jupyter-button oi-run">Run</button>
        <button class="jupyter-button oi-edit">Edit</button>
        <button class="jupyter-button oi-skip" disabled>Skip</button>
        <div class="oi-run-all"><button class="jupyter-button">Run all</button></div>
      </div>
    </div>`;
}

function decidedCard(language: string | null, code: string): string {
  const pre =
    language === null
      ? ''
      : `<pre class="oi-code-ran" data-language="${language}">${code}</pre>`;
  return `<div class="widget-vbox oi-card oi-card-decided">${pre}</div>`;
}

function setUp(html: string): void {
  document.body.innerHTML = html;
}

describe('pickPendingCard', () => {
  it('prefers the active cell', () => {
    setUp(`<div id="nb">
      <div id="c1">${pendingCard('first')}</div>
      <div id="c2">${pendingCard('second')}</div>
    </div>`);
    const card = pickPendingCard(
      document.getElementById('c2'),
      document.getElementById('nb')
    );
    expect(card?.id).toBe('second');
  });

  it('falls back to the first pending card in the notebook', () => {
    setUp(`<div id="nb">
      <div id="c1">${decidedCard('python', 'x = 1')}</div>
      <div id="c2">${pendingCard('only')}</div>
    </div>`);
    const card = pickPendingCard(
      document.getElementById('c1'),
      document.getElementById('nb')
    );
    expect(card?.id).toBe('only');
  });

  it('ignores decided cards and handles a missing active cell', () => {
    setUp(`<div id="nb">${decidedCard('python', 'x')}</div>`);
    expect(pickPendingCard(null, document.getElementById('nb'))).toBeNull();
  });
});

describe('card actions', () => {
  it('clicks the run button', () => {
    setUp(pendingCard('card'));
    const card = document.getElementById('card')!;
    const clicked = jest.fn();
    card.querySelector('.oi-run')!.addEventListener('click', clicked);
    expect(clickCardAction(card, 'run')).toBe(true);
    expect(clicked).toHaveBeenCalledTimes(1);
  });

  it('finds a button inside a wrapper carrying the class', () => {
    setUp(pendingCard('card'));
    const button = findActionButton(document.getElementById('card')!, 'runAll');
    expect(button?.tagName).toBe('BUTTON');
    expect(button?.textContent).toBe('Run all');
  });

  it('does not click a disabled or missing button', () => {
    setUp(pendingCard('card'));
    const card = document.getElementById('card')!;
    const clicked = jest.fn();
    card.querySelector('.oi-skip')!.addEventListener('click', clicked);
    expect(clickCardAction(card, 'skip')).toBe(false);
    expect(clickCardAction(card, 'stop')).toBe(false);
    expect(clickCardAction(null, 'run')).toBe(false);
    expect(clicked).not.toHaveBeenCalled();
  });
});

describe('ran code', () => {
  it('collects code of decided cards in order, skipping ones that ran nothing', () => {
    setUp(`<div id="cell">
      ${decidedCard('python', 'import pandas as pd')}
      ${decidedCard(null, '')}
      ${decidedCard('shell', 'ls &amp;&amp; pwd')}
      ${pendingCard('p')}
    </div>`);
    expect(ranCodeIn(document.getElementById('cell'))).toEqual([
      { language: 'python', code: 'import pandas as pd' },
      { language: 'shell', code: 'ls && pwd' }
    ]);
  });

  it('finds the decided card around a clicked node', () => {
    setUp(`<div id="cell">${decidedCard('html', '&lt;b&gt;x&lt;/b&gt;')}</div>`);
    const pre = document.querySelector('pre')!;
    expect(enclosingDecidedCard(pre)).toBe(pre.parentElement);
    expect(enclosingDecidedCard(document.getElementById('cell'))).toBeNull();
  });
});
