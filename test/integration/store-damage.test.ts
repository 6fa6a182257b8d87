// A damaged conversation store never bricks a session. Real worker, dev server, stand-in,
// files. Each session runs two turns (one with a tool call), then its store is damaged
// the way the issue found it — truncated, foreign, deleted, read-only, full — and the
// worker forgets what it cached (as a restart does). A lost or corrupt segment is
// repaired from what the workflow holds (0 messages lost: the next request carries the
// whole conversation); a store that cannot be written to fails the turn with a
// ConversationStoreError naming the cause, with no model request made (not a model
// fault, not retried as one), and the session goes on once the store is fixed (`reset`).
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearSegmentCache } from '../../activities/conversation-store';
import { workflowsPath } from '../../worker/worker';
import { resetUpdate, userMessageUpdate, type LogEntry } from '../../workflows/definitions';
import { say, sessionEnv, type SessionEnv, type SessionRun, use } from '../fixtures/session-harness';
import { closeTestEnv } from '../fixtures/worker-teardown';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

const run = promisify(execFile);

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;
let s: SessionEnv;
let running: Promise<unknown>;
let root: string;
const mounts: string[] = [];

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-damage-'));
  s = await sessionEnv(env, workflowBundle, {
    rules: [
      { match: { lastUserContains: 'list the files', hasToolResults: false }, reply: use('list_dir', { path: '.' }) },
      { match: { hasToolResults: true }, reply: say('listed') },
      { match: {}, reply: say('ok') },
    ],
  });
  running = s.keel.run();
});

afterAll(async () => {
  s?.keel.worker.shutdown();
  await running;
  await s?.standin.close();
  for (const m of mounts) await run('umount', [m]).catch(() => {});
  await fs.rm(root, { recursive: true, force: true });
  await closeTestEnv(env);
});

let n = 0;
async function tmpfs(size: string): Promise<string> {
  const dir = path.join(root, `mnt-${++n}`);
  await fs.mkdir(dir);
  await run('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

const texts = (body: unknown): string[] =>
  ((body as { messages: { content: string | { type: string; text?: string }[] }[] }).messages ?? []).flatMap((m) =>
    typeof m.content === 'string' ? [m.content] : m.content.filter((b) => b.type === 'text').map((b) => b.text ?? ''),
  );

async function turn(session: SessionRun, text: string, turns: number): Promise<void> {
  await session.handle.executeUpdate(userMessageUpdate, { args: [{ text }] });
  await session.waitForState((v) => v.session.turns === turns && v.status !== 'processing', 60_000);
}

/** A session with two turns behind it, its store in `storeDir`. */
async function twoTurns(storeDir: string, options: { maxConsecutiveErrors?: number } = {}): Promise<SessionRun> {
  const session = await s.start({ storeDir, ...options });
  await turn(session, 'please list the files', 1);
  await turn(session, 'second question', 2);
  return session;
}

async function newestSegment(storeDir: string): Promise<string> {
  const files = (await fs.readdir(path.join(storeDir, 'segments'), { recursive: true })).map(String).filter((f) => f.endsWith('.json'));
  const stats = await Promise.all(files.map(async (f) => ({ f, t: (await fs.stat(path.join(storeDir, 'segments', f))).mtimeMs })));
  return path.join(storeDir, 'segments', stats.sort((a, b) => b.t - a.t)[0]!.f);
}

const byKind = (log: LogEntry[], kind: string) => log.filter((e) => e.kind === kind) as (LogEntry & Record<string, unknown>)[];

/** After the damage: the third turn repairs the conversation and loses nothing. */
async function expectRepaired(session: SessionRun, error: RegExp): Promise<void> {
  const before = s.standin.requests.length;
  await turn(session, 'third question', 3);
  const state = await session.state();
  expect(state.status).toBe('active');
  const log = await session.log();
  expect(byKind(log, 'turn.error')).toEqual([]);
  const [repaired, ...more] = byKind(log, 'conversation.repaired');
  expect(more).toEqual([]);
  expect(repaired).toMatchObject({ lostTurns: [], lostMessages: 0, lostUserMessages: 0, keptMessages: 7 });
  expect(String(repaired!.error)).toMatch(error);
  // One request for the turn: the repaired conversation, whole (no model retry of a store fault).
  const requests = s.standin.requests.slice(before);
  expect(requests).toHaveLength(1);
  expect(texts(requests[0]!.body)).toEqual(['please list the files', 'listed', 'second question', 'ok', 'third question']);
  expect(JSON.stringify(requests[0]!.body)).toContain('"tool_result"');
}

describe('a damaged conversation store', () => {
  it('truncated: the newest segment cut in half is repaired', async () => {
    const storeDir = path.join(root, 'truncated');
    const session = await twoTurns(storeDir);
    const file = await newestSegment(storeDir);
    const body = await fs.readFile(file);
    await fs.writeFile(file, body.subarray(0, Math.floor(body.length / 2)));
    clearSegmentCache();
    await expectRepaired(session, /^conversation segment [0-9a-f]{64} in local directory .*truncated: is corrupt \(Unterminated string in JSON at position \d+; \d+ bytes\) \(not JSON\)$/);
  });

  it('foreign: a segment replaced by other JSON is repaired', async () => {
    const storeDir = path.join(root, 'foreign');
    const session = await twoTurns(storeDir);
    await fs.writeFile(await newestSegment(storeDir), JSON.stringify({ parent: null, messages: [{ role: 'user', content: 'not yours' }] }));
    clearSegmentCache();
    await expectRepaired(session, /is corrupt \(its content does not match its name\) \(hash mismatch\)$/);
  });

  it('deleted: the whole store directory removed under the running worker is repaired, tool definitions too', async () => {
    const storeDir = path.join(root, 'deleted');
    const session = await twoTurns(storeDir);
    await fs.rm(storeDir, { recursive: true, force: true });
    // No cache clearing: the worker keeps running, and must not trust what it remembers.
    await expectRepaired(session, /: is missing \(the segment a new one follows\)$/);
    // The store is whole again: a new worker (empty cache) reads it.
    clearSegmentCache();
    await turn(session, 'fourth question', 4);
    expect((await session.state()).status).toBe('active');
    expect(byKind(await session.log(), 'conversation.repaired')).toHaveLength(1);
  });

  it('read-only: the turn fails with the store error (EROFS), no model request, and the next goes on once it is writable', async () => {
    const storeDir = path.join(await tmpfs('2m'), 'store');
    const session = await twoTurns(storeDir);
    await run('mount', ['-o', 'remount,ro', path.dirname(storeDir)]);
    const before = s.standin.requests.length;
    await turn(session, 'third question', 3);
    expect(s.standin.requests.length).toBe(before);
    const [error, ...more] = byKind(await session.log(), 'turn.error');
    expect(more).toEqual([]);
    expect(String(error!.message)).toMatch(/^ConversationStoreError: conversation segment [0-9a-f]{64} in local directory \S+: cannot be written: EROFS: read-only file system/);
    expect(error).toMatchObject({ errorType: 'non_retryable', attempts: 1 });
    await run('mount', ['-o', 'remount,rw', path.dirname(storeDir)]);
    await turn(session, 'fourth question', 4);
    expect((await session.state()).status).toBe('active');
    const last = s.standin.requests.at(-1)!;
    const said = texts(last.body);
    for (const t of ['please list the files', 'second question', 'third question', 'fourth question']) expect(said.join('\n')).toContain(t);
  });

  it('full: the turn fails with ENOSPC, the session is suspended, and `reset` after space is freed goes on with every message', async () => {
    const mount = await tmpfs('512k');
    const storeDir = path.join(mount, 'store');
    const session = await twoTurns(storeDir, { maxConsecutiveErrors: 1 });
    const filler = path.join(mount, 'filler');
    await fs.writeFile(filler, Buffer.alloc(400 * 1024)).catch(() => {});
    const before = s.standin.requests.length;
    await session.handle.executeUpdate(userMessageUpdate, { args: [{ text: `third question ${'x'.repeat(150_000)}` }] });
    const suspended = await session.waitForState((v) => v.status === 'suspended', 60_000);
    expect(suspended.reason).toMatch(/error/);
    expect(s.standin.requests.length).toBe(before);
    const [error] = byKind(await session.log(), 'turn.error');
    expect(String(error!.message)).toMatch(/^ConversationStoreError: .*: cannot be written: ENOSPC: no space left on device/);
    expect((await fs.readdir(storeDir, { recursive: true })).map(String).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    await fs.rm(filler);
    await session.handle.executeUpdate(resetUpdate, { args: [{}] });
    await turn(session, 'fourth question', 4);
    expect((await session.state()).status).toBe('active');
    const said = texts(s.standin.requests.at(-1)!.body).join('\n');
    for (const t of ['please list the files', 'second question', 'third question', 'fourth question']) expect(said).toContain(t);
  });
});
