import type { KernelMessage } from '@jupyterlab/services';

import { clip, replyText, undoCode, undoSummary } from '../rollback';

function msg(type: string, content: object): KernelMessage.IIOPubMessage {
  return {
    header: { msg_type: type },
    content
  } as unknown as KernelMessage.IIOPubMessage;
}

describe('undo', () => {
  it('uses the command of each kernel kind', () => {
    expect(undoCode('open-interpreter')).toBe('%undo');
    expect(undoCode('ipython-magic')).toBe('%oi undo');
    expect(undoCode(undefined)).toBe('%undo');
  });

  it('reads the answer from displays, streams and errors', () => {
    const text = replyText([
      msg('status', { execution_state: 'busy' }),
      msg('display_data', {
        data: { 'text/markdown': 'x', 'text/plain': 'Rolled back. **Not restored**: `conn`.' }
      }),
      msg('stream', { name: 'stdout', text: 'more' }),
      msg('error', { ename: 'OIError', evalue: 'no checkpoint' })
    ]);
    expect(text).toBe('Rolled back. Not restored: `conn`.\nmore\nOIError: no checkpoint');
    expect(replyText([])).toBe('');
  });

  it('summarizes the answer for a notification', () => {
    expect(undoSummary('Nothing to undo: the conversation is empty.')).toEqual({
      short: 'Nothing to undo.',
      warn: false
    });
    const ok = undoSummary(
      'Removed the last instruction. Rolled back to before instruction 3 (“x”). Files removed: `a`.'
    );
    expect(ok).toEqual({
      short: 'Undone: rolled back to before instruction 3.',
      warn: false
    });
    const partial = undoSummary(
      'Rolled back to before instruction 2 (“y”). Not restored: `conn` (socket).'
    );
    expect(partial.warn).toBe(true);
    expect(partial.short).toContain('could not be restored');
  });

  it('clips a notification line to 140 characters', () => {
    expect(clip('short')).toBe('short');
    expect(clip('x'.repeat(140))).toBe('x'.repeat(140));
    expect(clip('x'.repeat(141))).toBe('x'.repeat(137) + '…');
    expect(undoSummary('y'.repeat(200)).short).toHaveLength(138);
  });
});
