// What the Temporal Web UI shows of Keel's details: the escaped text must read back as the
// original once rendered as CommonMark (checked with a small renderer of the two rules the
// UI applies that broke it: emphasis by underscores and "--" turned into a dash).
import { describe, expect, it } from 'vitest';
import { code, escapeMarkdown } from '../../workflows/markdown';

/** Reads a CommonMark inline string back: code spans verbatim, backslash escapes undone. */
function readBack(md: string): string {
  let out = '';
  for (let i = 0; i < md.length; ) {
    if (md[i] === '`') {
      const fence = md.slice(i).match(/^`+/)![0];
      const end = md.indexOf(fence, i + fence.length);
      let inner = md.slice(i + fence.length, end);
      if (inner.startsWith(' ') && inner.endsWith(' ') && inner.trim() !== '') inner = inner.slice(1, -1);
      out += inner;
      i = end + fence.length;
    } else if (md[i] === '\\' && /[!-/:-@[-`{-~]/.test(md[i + 1] ?? '')) {
      out += md[i + 1];
      i += 2;
    } else {
      // What the UI's renderer would otherwise do: emphasis markers vanish, -- becomes –.
      if (md.startsWith('--', i)) {
        out += '–';
        i += 2;
      } else if (md[i] === '_' || md[i] === '*') {
        i += 1;
      } else {
        out += md[i];
        i += 1;
      }
    }
  }
  return out;
}

describe('Markdown escaping of Web UI details', () => {
  it('keeps tool names and commands as they are', () => {
    expect(readBack('mcp__fs__read')).not.toBe('mcp__fs__read'); // the bug, unescaped
    for (const s of ['mcp__fs__read', 'node --test', 'a`b', '``x', 'x`', '*bold* _it_']) {
      expect(readBack(code(s))).toBe(s);
    }
  });

  it('escapes free text', () => {
    for (const s of ['Run `node --test` on mcp__fs__read!', 'Which colour? (red|blue) #1 <b>', 'a\\b']) {
      expect(readBack(escapeMarkdown(s))).toBe(s);
    }
  });
});
