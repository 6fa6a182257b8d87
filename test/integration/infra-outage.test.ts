// A blip in the infrastructure never ends a run. PostgreSQL (a real cluster from initdb,
// the fleet's conversation store) is stopped in the middle of a turn — after its command
// ran, before the model call that carries the command's result — and kept down for 5 s
// (KEEL_OUTAGE_MS; `KEEL_OUTAGE_MS=30000` is the 30 s run docs/deployment.md quotes), while a
// second message is sent. 5 s spans three tries of the store's backoff (1 s, 2 s, 5 s:
// machines/infra-retry.ts INFRA_WAIT), so the turn is seen waiting through growing delays; 30 s
// only added idle time (the fourth and fifth tries), not a different path. Before, the turn failed at once with
// `ConversationStoreError … ECONNREFUSED` and the message sent during the outage failed
// too. Now the session stays in its turn and says what it waits for; when the database is
// back the turn completes from where it was (the command is not run again), and the
// message sent during the outage is answered after it.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeStores } from '../../activities/store/open';
import { userMessageUpdate, type LogEntry } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { cliEnv, keel } from '../fixtures/client-cli';
import { startPostgres, type TestPostgres } from '../helpers/postgres';
import { uniqueTaskQueue } from '../helpers/temporal';
import { resolveTemporalCli } from '../../worker/dev-server';
import { KeelClient } from '../../client/keel-client';
import { probeStore } from '../../worker/store-probe';
import { useTemporal } from '../fixtures/use-temporal';

const OUTAGE_MS = Number(process.env.KEEL_OUTAGE_MS ?? 5_000);

const { env, workflowBundle } = useTemporal();
let pg: TestPostgres;

beforeAll(async () => {
  pg = await startPostgres();
}, 180_000);

afterAll(async () => {
  await closeStores();
  await pg?.stop();
});

/** The ids `temporal workflow list --query` finds: what an operator runs, against the same server. */
async function listed(query: string): Promise<string[]> {
  const cli = await resolveTemporalCli();
  const { stdout } = await promisify(execFile)(cli, ['workflow', 'list', '--address', env.address, '--query', query, '--output', 'json']);
  const rows = stdout.trim() === '' ? [] : (JSON.parse(stdout) as { execution?: { workflowId?: string } }[]);
  return rows.map((r) => r.execution?.workflowId ?? '');
}

const texts = (body: unknown): string[] =>
  ((body as { messages?: { content: string | { type: string; text?: string }[] }[] }).messages ?? []).flatMap((m) =>
    typeof m.content === 'string' ? [m.content] : m.content.filter((b) => b.type === 'text').map((b) => b.text ?? ''),
  );

describe('the conversation store (PostgreSQL) stopped mid-turn', () => {
  it(`is waited out: stopped ${OUTAGE_MS / 1000} s after a command ran, the turn completes without running it again; a message sent meanwhile is answered after`, async () => {
    const storeUrl = await pg.createDatabase('outage');
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          // The command marks that it ran, then holds the turn until the test has stopped the database.
          { match: { lastUserContains: 'first go', hasToolResults: false }, reply: use('run_command', { command: 'echo ran >> runs.log; while [ ! -f go-on ]; do sleep 0.1; done; echo done' }) },
          { match: { lastUserContains: 'second go' }, reply: say('second answered') },
          { match: { hasToolResults: true }, reply: say('first answered') },
        ],
      },
      { KEEL_STORE_URL: storeUrl },
    );
    await s.run(async () => {
      const run = await s.start();
      await run.waitForState((st) => st.status === 'active', 60_000);
      await run.handle.executeUpdate(userMessageUpdate, { args: [{ text: 'first go' }] });
      const log = path.join(s.workspace, 'runs.log');
      await waitUntil(() => fs.readFile(log, 'utf8').catch(() => ''), (t) => t.includes('ran'), 60_000, 'the command to run');

      await pg.halt();
      const stoppedAt = Date.now();
      await fs.writeFile(path.join(s.workspace, 'go-on'), '');
      // The model call after the command cannot reach the store: the turn waits, and says so.
      const waiting = await run.waitForState((st) => /^waiting for the conversation store \(postgres postgres:\/\/keel@127\.0\.0\.1:\d+\/outage\) since \d\d:\d\d:\d\d UTC, \d+ tr(y|ies): /.test(st.waiting ?? ''), 60_000);
      expect(waiting.status).toBe('processing');
      expect(waiting.turn?.status).toBe('calling_llm');
      // And `keel status` says so, as the state view does.
      const status = await keel(['status', run.handle.workflowId], cliEnv(s.taskQueue));
      expect(status.stdout).toMatch(/^ {2}waiting for the conversation store \(postgres .*\) since \d\d:\d\d:\d\d UTC, \d+ tr(y|ies): /m);
      // And the KeelWaiting search attribute: an operator finds every run the outage holds.
      const waitingQuery = `KeelWaiting = 'conversation-store' AND WorkflowId = '${run.handle.workflowId}'`;
      await waitUntil(() => listed(waitingQuery), (ids) => ids.includes(run.handle.workflowId), 30_000, 'the run listed by KeelWaiting');
      // The SDK's listing (the console's and GET /api/workflows') carries it too.
      const sdk = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const entry = (await sdk.list()).find((e) => e.id === run.handle.workflowId);
      expect(entry?.infraWaiting).toBe('conversation-store');
      // A message sent during the outage is taken (queued behind the turn), not refused.
      const second = await run.handle.executeUpdate(userMessageUpdate, { args: [{ text: 'second go' }] });
      expect(second.queued).toBe(true);
      // The outage lasts its length: that is the fault under test, not a synchronisation.
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt))));
      expect((await run.state()).status).toBe('processing');
      await pg.resume();

      const done = await run.waitForState((st) => st.session.turns === 2 && st.turn === null && st.queueLength === 0, 180_000);
      expect(done.status).toBe('active');
      expect(done.waiting ?? null).toBeNull();
      // The wait is over: the attribute is gone, so the query no longer finds the run.
      await waitUntil(() => listed(waitingQuery), (ids) => ids.length === 0, 30_000, 'KeelWaiting removed');
      expect(await listed(`KeelWaiting IS NULL AND WorkflowId = '${run.handle.workflowId}'`)).toEqual([run.handle.workflowId]);
      const events: LogEntry[] = await run.log();
      const kinds = events.map((e) => e.kind);
      expect(kinds.filter((k) => k === 'turn.completed'), kinds.join(' ')).toHaveLength(2);
      expect(kinds).not.toContain('turn.error');
      const waited = events.filter((e) => e.kind === 'infra.waiting');
      expect(waited.length).toBeGreaterThan(0);
      expect(waited[0]).toMatchObject({ service: 'conversation store', tries: 1 });
      expect((waited[0] as { error: string }).error).toMatch(/ECONNREFUSED|admin_shutdown|terminat|connect/i);
      const recovered = events.find((e) => e.kind === 'infra.recovered') as { waitedMs: number } | undefined;
      expect(recovered?.waitedMs).toBeGreaterThan(0);
      // The command ran once: the turn went on from its result.
      expect((await fs.readFile(log, 'utf8')).trim().split('\n')).toEqual(['ran']);
      // Nothing lost: the second turn's request carries the first turn's messages and answer.
      const last = texts(s.standin.requests.at(-1)!.body);
      expect(last).toEqual(expect.arrayContaining(['first go', 'first answered', 'second go']));
      // And the first turn's answer came after the command's result, in the same turn.
      const answered = s.standin.requests.filter((r) => texts(r.body).includes('first go') && !texts(r.body).includes('second go'));
      expect(JSON.stringify(answered.at(-1)!.body)).toContain('done');
      // A history of a run that waited (the KeelWaiting upserts in it), for the replay test.
      await recordHistory(run.handle, 'store-outage-waiting');
    });
  }, 300_000);
});

describe('a worker started while its conversation store (PostgreSQL) is down', () => {
  it('waits for the store, one line a try, and starts when it is back (it used to exit 1 at once)', async () => {
    const storeUrl = await pg.createDatabase('probe_outage');
    await pg.halt();
    const lines: string[] = [];
    let resumed = false;
    try {
      const probing = probeStore({ connection: env.nativeConnection, namespace: env.namespace, taskQueue: uniqueTaskQueue('probe-outage'), env: { KEEL_STORE_URL: storeUrl }, log: (l) => lines.push(l) });
      const outcome = probing.then(
        (p) => ({ ok: true as const, p }),
        (e: unknown) => ({ ok: false as const, e }),
      );
      // Still waiting after its first tries: it has not given up.
      await waitUntil(async () => lines.length, (n) => n >= 2, 60_000, 'two waiting lines');
      expect(lines[0]).toMatch(/^keel worker: waiting for the conversation store postgres postgres:\/\/keel@127\.0\.0\.1:\d+\/probe_outage, try 1: .*(ECONNREFUSED|connect).*; next try in 1 s$/);
      await pg.resume();
      resumed = true;
      const done = await outcome;
      expect(done.ok, done.ok ? '' : String((done.e as Error).message)).toBe(true);
      if (done.ok) expect(done.p.line).toMatch(/^keel worker: conversation store: postgres postgres:\/\/keel@127\.0\.0\.1:\d+\/probe_outage \(id [0-9a-f-]{36}, marked by this worker/);
      expect(lines.at(-1)).toMatch(/^keel worker: the conversation store postgres \S+ answered after \d+ tries/);
    } finally {
      if (!resumed) await pg.resume();
    }
  }, 180_000);
});
