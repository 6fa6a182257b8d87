// How workflow history grows with a session's length: `npx tsx bench/history-growth.ts
// [turns=100] [outputBytes=5000]`. Starts its own Temporal dev server (in memory), the
// model stand-in and a Keel worker; every turn the model reads a file of `outputBytes`
// and answers. Prints the history size every 10 turns and the bytes each turn added, and the
// conversation store's bytes beside them (issue 53: a tool result stored once, not twice).
// With the conversation passed by reference, bytes per turn stay flat (linear growth);
// with the whole conversation inline in every model call they would grow with the turn
// number (quadratic growth: temporalio/sdk-python#1890).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { ClosableConnection } from '../client/grpc-retry';
import proto, { type temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { startStandin } from '../standin/server';
import { startDevServer } from '../worker/dev-server';
import { createKeelWorker } from '../worker/worker';
import { stateQuery, userMessageUpdate } from '../workflows/definitions';
import { sessionWorkflow } from '../workflows/session';

const { HistoryEvent } = proto.temporal.api.history.v1;
type History = temporal.api.history.v1.IHistory;
const turns = Number(process.argv[2] ?? 100);
const outputBytes = Number(process.argv[3] ?? 5_000);

const server = await startDevServer({ port: 0, readyTimeoutMs: 120_000 });
const standin = await startStandin({
  scenario: {
    rules: [
      { match: { hasToolResults: false }, reply: { content: [{ type: 'tool_use', name: 'read_file', input: { path: 'big.txt' } }] } },
      { match: { hasToolResults: true }, reply: { content: [{ type: 'text', text: 'Read it.' }] } },
    ],
  },
});
const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-')));
const line = 'The quick brown fox jumps over the lazy dog; keel keeps history linear.\n';
await fs.writeFile(path.join(workspace, 'big.txt'), line.repeat(Math.ceil(outputBytes / line.length)));
const native = await NativeConnection.connect({ address: server.address });
const connection = await ClosableConnection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
const taskQueue = 'bench';
const keel = await createKeelWorker({
  connection: native,
  namespace: server.namespace,
  taskQueue,
  env: { ANTHROPIC_API_KEY: 'sk-ant-bench', ANTHROPIC_BASE_URL: standin.url },
});
const running = keel.run();

/** Bytes in the session's conversation store (the workspace's .keel/store, the local backend). */
async function storeBytes(dir = path.join(workspace, '.keel', 'store')): Promise<number> {
  let total = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? await storeBytes(full) : (await fs.stat(full)).size;
  }
  return total;
}

async function size(handle: { fetchHistory(): Promise<History> }): Promise<{ bytes: number; events: number }> {
  const events = (await handle.fetchHistory()).events ?? [];
  return { bytes: events.reduce((sum, e) => sum + HistoryEvent.encode(e).finish().length, 0), events: events.length };
}

try {
  const handle = await client.workflow.start(sessionWorkflow, {
    taskQueue,
    workflowId: `bench-${Date.now()}`,
    args: [{ workspace, policy: { mode: 'full-auto' }, continueAsNewWhenSuggested: false }],
  });
  console.log(`turns=${turns}, tool output ${outputBytes} B per turn`);
  console.log('turn\thistory bytes\tevents\tbytes added by this turn\tstore bytes\tstore bytes per turn so far');
  let previous = await size(handle);
  const storeAtStart = await storeBytes();
  for (let turn = 1; turn <= turns; turn++) {
    // A different file each turn, as a real session reads: the store keeps equal texts once.
    await fs.writeFile(path.join(workspace, 'big.txt'), `turn ${turn}\n${line.repeat(Math.ceil(outputBytes / line.length))}`);
    await handle.executeUpdate(userMessageUpdate, { args: [`turn ${turn}`] });
    for (;;) {
      const state = await handle.query(stateQuery);
      if (state.status === 'active' && state.session.turns === turn) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (turn % 10 === 0 || turn === 1 || turn === turns) {
      const now = await size(handle);
      const before = turn === 1 ? previous : await sizeBefore(handle, turn);
      const stored = await storeBytes();
      console.log(`${turn}\t${now.bytes}\t${now.events}\t${now.bytes - before.bytes}\t${stored}\t${Math.round((stored - storeAtStart) / turn)}`);
      previous = now;
    }
  }
  await handle.terminate('bench over');
} finally {
  keel.worker.shutdown();
  await running;
  await native.close();
  await connection.close();
  await standin.close();
  await server.stop();
  await fs.rm(workspace, { recursive: true, force: true });
}

/** History size just before `turn` began: up to the event that scheduled its first model call. */
async function sizeBefore(handle: { fetchHistory(): Promise<History> }, turn: number): Promise<{ bytes: number; events: number }> {
  const events = (await handle.fetchHistory()).events ?? [];
  const marker = `/turn-${turn}:1:1`;
  const index = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityId?.endsWith(marker));
  const upTo = events.slice(0, index < 0 ? events.length : index);
  // The update that carried this turn's message came just before: count it with the turn.
  let start = upTo.length;
  while (start > 0 && !upTo[start - 1]?.workflowExecutionUpdateAcceptedEventAttributes) start--;
  const before = upTo.slice(0, Math.max(0, start - 1));
  return { bytes: before.reduce((sum, e) => sum + HistoryEvent.encode(e).finish().length, 0), events: before.length };
}
