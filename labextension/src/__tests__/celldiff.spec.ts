import {
  lineDiff,
  parseEditState,
  parseProposal,
  sideBySide
} from '../celldiff';

describe('lineDiff', () => {
  it('keeps common lines and shows a change as removed then added', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc')).toEqual([
      { kind: ' ', text: 'a' },
      { kind: '-', text: 'b' },
      { kind: '+', text: 'B' },
      { kind: ' ', text: 'c' }
    ]);
  });

  it('handles empty sources', () => {
    expect(lineDiff('', 'x')).toEqual([{ kind: '+', text: 'x' }]);
    expect(lineDiff('x', '')).toEqual([{ kind: '-', text: 'x' }]);
    expect(lineDiff('', '')).toEqual([]);
  });

  it('pairs removed and added lines side by side', () => {
    const rows = sideBySide(lineDiff('a\nb', 'a\nc\nd'));
    expect(rows.map(([l, r]) => [l?.text ?? null, r?.text ?? null])).toEqual([
      ['a', 'a'],
      ['b', 'c'],
      [null, 'd']
    ]);
  });
});

describe('parsing', () => {
  it('reads a proposal and drops malformed edits', () => {
    const p = parseProposal({
      proposal: 'p1',
      turn: 2,
      edits: [{ key: '0', cell: '3', new_source: 'x' }, { key: 1 }]
    });
    expect(p).toEqual({
      proposal: 'p1',
      turn: 2,
      edits: [{ key: '0', cell: '3', new_source: 'x' }]
    });
    expect(parseProposal({ proposal: 'p', edits: [] })).toBeNull();
  });

  it('reads a state message', () => {
    expect(
      parseEditState({
        type: 'cell_edit_state',
        proposal: 'p',
        open: true,
        decided: { '0': { action: 'accepted', by: 'ann' } }
      })
    ).toEqual({
      proposal: 'p',
      open: true,
      decided: { '0': { action: 'accepted', by: 'ann' } }
    });
    expect(parseEditState({ type: 'status' })).toBeNull();
  });
});
