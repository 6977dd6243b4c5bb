/**
 * Pure helpers of the "States" button (see states.ts): the kernel's command
 * prefix and the rows of the tree `%states` prints.
 */

/** One line of the `%states` tree. */
export interface IStateRow {
  name: string;
  depth: number;
  current: boolean;
  details: string;
}

/** The command prefix of this kernel (`%` or `%oi `). */
export function statesPrefix(kernelKind: string | undefined): string {
  return kernelKind === 'ipython-magic' ? '%oi ' : '%';
}

/** The rows of the tree `%states` prints ("- `NAME` — details", two spaces a level). */
export function parseStates(text: string): IStateRow[] {
  const rows: IStateRow[] = [];
  for (const line of text.split('\n')) {
    const match = /^( *)- `([^`]+)`( ← you are here)? — (.*)$/.exec(line);
    if (match) {
      rows.push({
        name: match[2],
        depth: match[1].length / 2,
        current: match[3] !== undefined,
        details: match[4]
      });
    }
  }
  return rows;
}
