// The CLI's questions (client/cli/output.ts LineReader): Ctrl-C's "Cancel goal?" is asked over a
// pending approval; after "n" the approval is asked again, so the person sees what still waits
// for them (it stayed pending with no question on the screen).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineReader } from '../../client/cli/output';

describe('LineReader', () => {
  it('asks the pending question again once a question asked over it is answered', async () => {
    const input = new PassThrough();
    const shown: string[] = [];
    const reader = new LineReader(input, undefined, (text) => void shown.push(text));
    try {
      const approval = reader.next('> ', '? [code] write_file toolu_1\n  allow? [y/n/always]');
      const cancel = reader.next('> ');
      expect(shown).toEqual(['> ', '> ']);
      input.write('n\n');
      expect(await cancel).toBe('n');
      expect(shown.at(-1)).toBe('? [code] write_file toolu_1\n  allow? [y/n/always]\n> ');
      input.write('y\n');
      expect(await approval).toBe('y');
      // Nothing waits any more: nothing is asked again.
      expect(shown).toHaveLength(3);
    } finally {
      reader.close();
    }
  });
});
