// Deltas outside the workflow (issue #31): is an activity's heartbeat a channel clients can
// read model text from, and what does it cost next to a signal per delta?
// `npx tsx bench/delta-channel.ts [deltas=200] [intervalMs=50] [readEveryMs=25]`.
// Starts a dev server (in memory) and a worker in this process. For each mode it runs one
// probe workflow whose activity sends `deltas` deltas, while a reader polls: the heartbeat
// mode's reader calls DescribeWorkflowExecution (the server answers alone, no worker), the
// signal mode's reader does nothing (its deltas land in the workflow; Keel's readers then
// query the workflow, a worker task each). Prints per delta: the server's CPU, the history
// events, and for heartbeats the latency from sending to a reader seeing it. Writes
// bench/results/delta-channel.json.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { ClosableConnection } from '../client/grpc-retry';
import { startDevServer } from '../worker/dev-server';
import { createActivities } from './delta-channel/activities';
import { cpuMs } from './suite/proc';
import { percentile } from './suite/stats';

const here = path.dirname(fileURLToPath(import.meta.url));
const deltas = Number(process.argv[2] ?? 200);
const intervalMs = Number(process.argv[3] ?? 50);
const readEveryMs = Number(process.argv[4] ?? 25);

const server = await startDevServer({ port: 0, readyTimeoutMs: 120_000 });
const serverPid = server.process.pid!;
const native = await NativeConnection.connect({ address: server.address });
const connection = await ClosableConnection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
const taskQueue = `delta-channel-${process.pid}`;
const worker = await Worker.create({
  connection: native,
  namespace: server.namespace,
  taskQueue,
  workflowsPath: path.join(here, 'delta-channel/workflows.ts'),
  activities: createActivities(client),
  // Heartbeats reach the server at most this often: the channel's own latency floor.
  maxHeartbeatThrottleInterval: `${Math.max(1, Math.floor(intervalMs / 2))} milliseconds`,
  defaultHeartbeatThrottleInterval: `${Math.max(1, Math.floor(intervalMs / 2))} milliseconds`,
});
const results: Record<string, unknown> = {};
await worker.runUntil(async () => {
  for (const mode of ['signal', 'heartbeat'] as const) {
    const workflowId = `probe-${mode}-${Date.now()}`;
    const cpuBefore = cpuMs(serverPid);
    const started = Date.now();
    const handle = await client.workflow.start('deltaProbe', { taskQueue, workflowId, args: [mode, deltas, intervalMs] });
    const latencies: number[] = [];
    let lastSeq = 0;
    let reads = 0;
    let done = false;
    const result = handle.result().finally(() => {
      done = true;
    });
    if (mode === 'heartbeat') {
      while (!done) {
        const described = await client.workflowService.describeWorkflowExecution({ namespace: server.namespace, execution: { workflowId } });
        reads += 1;
        const payload = described.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        if (payload?.data) {
          const seen = JSON.parse(Buffer.from(payload.data).toString()) as { seq: number; at: number };
          if (seen.seq > lastSeq) {
            latencies.push(Date.now() - seen.at);
            lastSeq = seen.seq;
          }
        }
        await new Promise((r) => setTimeout(r, readEveryMs));
      }
    }
    const received = (await result) as number;
    const wallMs = Date.now() - started;
    const serverCpuMs = (cpuMs(serverPid)) - cpuBefore;
    const events = (await handle.fetchHistory()).events?.length ?? 0;
    const row = {
      mode,
      deltas,
      intervalMs,
      wallMs,
      serverCpuMs,
      serverCpuMsPerDelta: +(serverCpuMs / deltas).toFixed(3),
      historyEvents: events,
      eventsPerDelta: +(events / deltas).toFixed(2),
      ...(mode === 'heartbeat'
        ? { reads, readEveryMs, deltasSeen: latencies.length, latencyP50Ms: percentile(latencies, 50), latencyP95Ms: percentile(latencies, 95) }
        : { signalsReceived: received }),
    };
    results[mode] = row;
    console.log(JSON.stringify(row));
  }
  // What a reader alone costs the server: DescribeWorkflowExecution on a closed workflow, many times.
  const idleId = `probe-idle-${Date.now()}`;
  await client.workflow.execute('deltaProbe', { taskQueue, workflowId: idleId, args: ['heartbeat', 1, 1] });
  const before = cpuMs(serverPid);
  const n = 1000;
  for (let i = 0; i < n; i += 1) await client.workflowService.describeWorkflowExecution({ namespace: server.namespace, execution: { workflowId: idleId } });
  const perRead = ((cpuMs(serverPid)) - before) / n;
  results.describe = { calls: n, serverCpuMsPerCall: +perRead.toFixed(3) };
  console.log(JSON.stringify(results.describe));
  // The heartbeat channel's own cost: the run's server CPU less its reads at that price.
  const hb = results.heartbeat as { serverCpuMs: number; reads: number };
  results.heartbeatWithoutReads = { serverCpuMsPerDelta: +((hb.serverCpuMs - hb.reads * perRead) / deltas).toFixed(3) };
  console.log(JSON.stringify(results.heartbeatWithoutReads));
});
await fs.writeFile(path.join(here, 'results', 'delta-channel.json'), `${JSON.stringify({ when: new Date().toISOString(), command: `npx tsx bench/delta-channel.ts ${deltas} ${intervalMs} ${readEveryMs}`, results }, null, 2)}\n`);
await native.close();
await connection.close();
await server.stop();
