import { parseStates, statesPrefix } from '../statestext';

describe('parseStates', () => {
  it('reads the tree %states prints, with the current one', () => {
    const text = [
      'States (each under the one it grew from):',
      '',
      '- `S1` — 14:02:11, before any instruction; 1 variable (on disk), 1 file, 3 bytes',
      '  - `S2` ← you are here — 14:05:40, after instruction 2 (“x”); 2 variables (fork)',
      '  - `S3` — 14:09:02, before any instruction; 2 variables (on disk), 0 files',
      '',
      '`%state restore NAME` goes back to one (the others stay).'
    ].join('\n');
    const rows = parseStates(text);
    expect(rows.map(r => [r.name, r.depth, r.current])).toEqual([
      ['S1', 0, false],
      ['S2', 1, true],
      ['S3', 1, false]
    ]);
    expect(rows[1].details).toContain('after instruction 2');
  });

  it('finds nothing in a session without states', () => {
    expect(parseStates('No named states yet.')).toEqual([]);
  });

  it('uses the prefix of the kernel', () => {
    expect(statesPrefix('ipython-magic')).toBe('%oi ');
    expect(statesPrefix('open-interpreter')).toBe('%');
  });
});
