// Who reads a workflow now (activities/live-readers.ts): the model activity heartbeats its
// text only for them, so a reader must count for as long as it keeps reading, and a gone one not for long.
import { afterEach, describe, expect, it } from 'vitest';
import { forgetReaders, hasReader, noteReader, READ_WINDOW_MS } from '../../activities/live-readers';

afterEach(() => forgetReaders());

describe('live readers', () => {
  it('a workflow read within the window is read; after it, not, until it is read again', () => {
    expect(hasReader('wf-1', 1_000)).toBe(false);
    noteReader('wf-1', 1_000);
    expect(hasReader('wf-1', 1_000 + READ_WINDOW_MS - 1)).toBe(true);
    expect(hasReader('wf-2', 1_000)).toBe(false);
    expect(hasReader('wf-1', 1_000 + READ_WINDOW_MS)).toBe(false);
    noteReader('wf-1', 10_000);
    expect(hasReader('wf-1', 10_001)).toBe(true);
  });

  it('a quiet reader, polling every 500 ms, counts all along', () => {
    for (let at = 0; at <= 10_000; at += 500) {
      noteReader('wf-quiet', at);
      expect(hasReader('wf-quiet', at + 499)).toBe(true);
    }
  });

  it('remembers at most 10,000 workflows: the least recently read go first, recent ones stay', () => {
    noteReader('first', 0);
    for (let i = 0; i < 10_000; i++) noteReader(`wf-${i}`, 1);
    // Read again: now the most recent.
    noteReader('wf-0', 2);
    noteReader('one-more', 2);
    expect(hasReader('first', 2)).toBe(false);
    expect(hasReader('wf-0', 2)).toBe(true);
    expect(hasReader('wf-1', 2)).toBe(false);
    expect(hasReader('wf-2', 2)).toBe(true);
    expect(hasReader('one-more', 2)).toBe(true);
  });
});
