// The pure rules of workspace checkpoints, fork and rewind (machines/checkpoint-manifest.ts,
// machines/checkpoint-budget.ts, machines/turn-checkpoints.ts).
import { describe, expect, it } from 'vitest';
import { applyChain, CHECKPOINT_FORMAT, checkpointIgnores, diffStates, formatFor, linkStaysInside, manifestDelta, needsHash, parseManifest, racy, type WorkspaceState } from '../../../machines/checkpoint-manifest';
import { DEFAULT_CHECKPOINT_LIMITS, keepFile } from '../../../machines/checkpoint-budget';
import { pickCheckpoint, rewindList, rewindRefusal, type TurnCheckpoint } from '../../../machines/turn-checkpoints';

/** A string matching `re`, inside an expected object. */
const matching = (re: RegExp): string => expect.stringMatching(re) as string;

const file = (hash: string, size = 1, mtimeMs = 1, mode = 0o644) => ({ kind: 'file' as const, hash, size, mode, mtimeMs });
const cp = (turn: number, extra: Partial<TurnCheckpoint> = {}): TurnCheckpoint => ({
  id: `c${turn}`, turn, turnId: turn === 0 ? null : `t${turn}`, at: '', head: null, messages: turn * 2, manifest: 'a'.repeat(64), changed: 0, removed: 0, skipped: [], incomplete: null, error: null, ...extra,
});

describe('checkpoint manifests', () => {
  it('a delta holds only what changed; applying the chain gives the state back', () => {
    const s0: WorkspaceState = { 'a.txt': file('h1'), 'b.txt': file('h2') };
    const s1: WorkspaceState = { 'a.txt': file('h1'), 'c.txt': file('h3'), 'b.txt': file('h4', 2) };
    const d = manifestDelta(s0, s1);
    expect(Object.keys(d.set).sort()).toEqual(['b.txt', 'c.txt']);
    expect(d.removed).toEqual([]);
    const d2 = manifestDelta(s1, { 'c.txt': file('h3') });
    expect(d2).toEqual({ set: {}, removed: ['a.txt', 'b.txt'] });
    const chain = [
      { format: CHECKPOINT_FORMAT, parent: null, set: s0, removed: [], incomplete: null },
      { format: CHECKPOINT_FORMAT, parent: 'x', ...d, incomplete: null },
      { format: CHECKPOINT_FORMAT, parent: 'y', ...d2, incomplete: null },
    ] as const;
    expect(applyChain(chain.slice(0, 2).map((m) => ({ ...m, removed: [...m.removed] })))).toEqual(s1);
    expect(applyChain(chain.map((m) => ({ ...m, removed: [...m.removed] })))).toEqual({ 'c.txt': file('h3') });
  });

  it('an incomplete scan removes nothing', () => {
    expect(manifestDelta({ 'a.txt': file('h1') }, {}, false)).toEqual({ set: {}, removed: [] });
  });

  it('a file is hashed again only when its size, mtime or mode changed', () => {
    expect(needsHash(file('h', 5, 10), { size: 5, mtimeMs: 10, mode: 0o644 })).toBe(false);
    expect(needsHash(file('h', 5, 10), { size: 5, mtimeMs: 11, mode: 0o644 })).toBe(true);
    expect(needsHash(file('h', 5, 10), { size: 5, mtimeMs: 10, mode: 0o755 })).toBe(true);
    expect(needsHash(undefined, { size: 5, mtimeMs: 10, mode: 0o644 })).toBe(true);
  });

  it('with what the last scan of the directory saw, a file replaced (another inode) or rewritten (another ctime) with the same size and mtime is hashed again', () => {
    const seen = { size: 5, mtimeMs: 10, mode: 0o644, ino: 7, ctimeMs: 10 };
    expect(needsHash(file('h', 5, 10), seen, seen)).toBe(false);
    expect(needsHash(file('h', 5, 10), { ...seen, ino: 8 }, seen)).toBe(true);
    expect(needsHash(file('h', 5, 10), { ...seen, ctimeMs: 12 }, seen)).toBe(true);
    // The manifest alone (another worker took the last checkpoint) cannot tell.
    expect(needsHash(file('h', 5, 10), { ...seen, ino: 8 })).toBe(false);
    // A file a restore wrote has a new mtime, and the cache knows it has the manifest's content.
    const restored = { ...seen, mtimeMs: 99, ctimeMs: 99 };
    expect(needsHash(file('h', 5, 10), restored, restored)).toBe(false);
    expect(needsHash(file('h', 5, 10), restored)).toBe(true);
  });

  it('a file stamped within the clock tick it was read in is racy: its stat is not trusted next time', () => {
    expect(racy({ mtimeMs: 1000, ctimeMs: 1000 }, 1010)).toBe(true);
    expect(racy({ mtimeMs: 900, ctimeMs: 1000 }, 1010)).toBe(true);
    expect(racy({ mtimeMs: 900, ctimeMs: 900 }, 1010)).toBe(false);
  });

  it('a manifest is written in the oldest format that holds it: 2 only when it names a pack', () => {
    expect(formatFor({ 'a.txt': file('h') })).toBe(1);
    expect(formatFor({ 'a.txt': { ...file('h'), pack: { id: 'p', offset: 0 } } })).toBe(2);
    expect(() => parseManifest({ format: 1, parent: null, set: { 'a.txt': { ...file('h'), pack: { id: 'p', offset: 0 } } }, removed: [] }, 'abc')).toThrow(/damaged/);
    expect(parseManifest({ format: 2, parent: null, set: {}, removed: [] }, 'abc').format).toBe(2);
  });

  it('a manifest of another format is refused by name', () => {
    expect(() => parseManifest({ format: 3, parent: null, set: {}, removed: [] }, 'abc')).toThrow(/format 3; this worker reads formats 1 and 2/);
    expect(() => parseManifest({ format: 1, parent: null }, 'abc')).toThrow(/damaged/);
  });

  it("Keel's and git's state are never recorded nor restored over", () => {
    expect(checkpointIgnores('.keel/store/x')).toBe(true);
    expect(checkpointIgnores('sub/.git/config')).toBe(true);
    expect(checkpointIgnores('src/keel.ts')).toBe(false);
  });

  it('a link stays inside only when its text does, nothing followed', () => {
    expect(linkStaysInside('a/link', '../b.txt')).toBe(true);
    expect(linkStaysInside('link', '../outside')).toBe(false);
    expect(linkStaysInside('link', '/etc/passwd')).toBe(false);
    expect(linkStaysInside('a/b/link', '../../x/../y')).toBe(true);
    expect(linkStaysInside('a/link', '../../y')).toBe(false);
  });

  it('the diff between two turns lists files added, removed and changed', () => {
    expect(diffStates({ a: file('1'), b: file('2'), c: file('3') }, { a: file('1', 1, 99), b: file('9'), d: file('4') })).toEqual({ added: ['d'], removed: ['c'], changed: ['b'] });
  });
});

describe('checkpoint budget', () => {
  const limits = { ...DEFAULT_CHECKPOINT_LIMITS, maxFileBytes: 1024, maxBytes: 4096 };
  it('a file over the limit is not kept, with a message naming it, its size and the option', () => {
    const d = keepFile('big.bin', 2 * 1024 * 1024, limits, 0, true);
    expect(d).toMatchObject({ keep: false });
    expect(d.keep === false && d.reason).toMatch(/^big\.bin: 2\.0 MiB is over the checkpoint limit .* \(checkpoints\.maxFileBytes\)/);
  });
  it('new content past the session budget is not kept; content already stored always is', () => {
    expect(keepFile('x', 1000, limits, 3500, false)).toMatchObject({ keep: false, reason: matching(/checkpoints\.maxBytes/) });
    expect(keepFile('x', 1000, limits, 3500, true)).toEqual({ keep: true });
    expect(keepFile('x', 1000, limits, 3000, false)).toEqual({ keep: true });
  });
});

describe('fork points and rewind', () => {
  const live = [cp(0), cp(1), cp(2), cp(3)];
  it('picks a live turn, or any checkpoint by id (a rewound one too)', () => {
    expect(pickCheckpoint(live, [], { turn: 2 })).toMatchObject({ ok: true, checkpoint: { id: 'c2' } });
    expect(pickCheckpoint(live.slice(0, 2), [{ at: '', toTurn: 1, by: 'x', checkpoints: [cp(2, { id: 'old' })] }], { id: 'old' })).toMatchObject({ ok: true, checkpoint: { turn: 2 } });
  });
  it('a turn without a checkpoint (running, failed, before a fork) is refused with the reason', () => {
    expect(pickCheckpoint(live, [], { turn: 7 })).toMatchObject({ ok: false, code: 'no_checkpoint', message: matching(/turns 0–3; a running turn has none/) });
    expect(pickCheckpoint([cp(5, { id: 'fork-point' })], [], { turn: 2 })).toMatchObject({ ok: false, message: matching(/fork its parent/) });
    expect(pickCheckpoint([cp(1, { manifest: null, error: 'disk full' })], [], { turn: 1 })).toMatchObject({ ok: false, code: 'checkpoint_failed', message: matching(/disk full/) });
  });
  it('only a proven human rewinds, never during a turn or a checkpoint', () => {
    const idle = { turnRunning: false, busy: false, status: 'active', enabled: true };
    expect(rewindRefusal({ toTurn: 1, proven: false, approver: 'model' }, idle)).toMatchObject({ code: 'needs_human' });
    expect(rewindRefusal({ toTurn: 1, proven: true, approver: 'ann' }, { ...idle, turnRunning: true })).toMatchObject({ code: 'turn_running' });
    expect(rewindRefusal({ toTurn: 1, proven: true, approver: 'ann' }, { ...idle, busy: true })).toMatchObject({ code: 'busy' });
    expect(rewindRefusal({ toTurn: 1, proven: true, approver: 'ann' }, { ...idle, enabled: false })).toMatchObject({ code: 'checkpoints_off' });
    expect(rewindRefusal({ toTurn: 1, proven: true, approver: 'ann' }, { ...idle, status: 'closed' })).toMatchObject({ code: 'ended' });
    expect(rewindRefusal({ toTurn: 1, proven: true, approver: 'ann' }, idle)).toBeNull();
  });
  it('a rewind keeps the boundaries up to the turn and sets the later ones aside', () => {
    expect(rewindList(live, 1)).toEqual({ kept: [cp(0), cp(1)], dropped: [cp(2), cp(3)] });
  });
});
