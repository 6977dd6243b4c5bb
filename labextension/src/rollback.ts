/**
 * Pure helpers of "Undo Last Instruction" (see undo.ts): which command line
 * undoes in this kernel, and the text of the kernel's answer.
 */

import type { KernelMessage } from '@jupyterlab/services';

/** The command line that undoes the last instruction in this kernel. */
export function undoCode(kernelKind: string | undefined): string {
  return kernelKind === 'ipython-magic' ? '%oi undo' : '%undo';
}

/** The plain text of the messages an execution sent (display, stream, error). */
export function replyText(messages: KernelMessage.IIOPubMessage[]): string {
  const parts: string[] = [];
  for (const msg of messages) {
    const content = msg.content as { [key: string]: any }; // eslint-disable-line
    const type = msg.header.msg_type;
    if (type === 'display_data' || type === 'execute_result') {
      const plain = content.data?.['text/plain'];
      if (typeof plain === 'string') {
        parts.push(plain);
      }
    } else if (type === 'stream') {
      parts.push(String(content.text ?? ''));
    } else if (type === 'error') {
      parts.push(`${content.ename}: ${content.evalue}`);
    }
  }
  return parts.join('\n').replace(/\*\*/g, '').trim();
}

/**
 * A notification-sized summary of the undo's answer (the full text goes in a
 * dialog) and whether it deserves a warning (something was not restored).
 */
export function undoSummary(text: string): { short: string; warn: boolean } {
  if (/Nothing to undo/.test(text)) {
    return { short: 'Nothing to undo.', warn: false };
  }
  const warn = /not restored/i.test(text);
  const rolled = /Rolled back to before instruction \d+/.exec(text);
  let short = rolled
    ? `Undone: ${rolled[0].charAt(0).toLowerCase()}${rolled[0].slice(1)}.`
    : text.split('\n')[0];
  if (warn) {
    short += ' Some things could not be restored: see Details.';
  }
  return { short: clip(short), warn };
}

/** A line cut to a notification's length (140 characters, an ellipsis at the cut). */
export function clip(line: string): string {
  return line.length > 140 ? line.slice(0, 137) + '…' : line;
}
