// schemathesis (PyPI, installed into .keel/py by scripts/schemathesis.sh) against the live
// /openapi.json of the API: generated valid and invalid requests to every operation must
// get no server error and only responses that the document describes (status, content
// type, schema). A real worker answers the goals and sessions it starts (the model stand-in
// only ever says "ok", so no tool runs); they are terminated afterwards.
// KEEL_SCHEMATHESIS_EXAMPLES sets the fuzzing examples per operation (default 5: most of the run's time is the goals and sessions its requests start; `npm run api:fuzz` runs 100 and the stateful phase),
// KEEL_SCHEMATHESIS_PHASES the phases (`npm run api:fuzz` adds the stateful one),
// KEEL_SCHEMATHESIS_MAX_TIME a time budget in seconds for the whole run.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer, type RunningServer } from '../../server/main';
import { TEST_TOKEN } from '../fixtures/serve-process';
import { KEY, sessionEnv, type SessionEnv } from '../fixtures/session-harness';
import { killWhenTestEnds } from '../fixtures/child-teardown';
import { useTemporal } from '../fixtures/use-temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const reportDir = path.join(root, '.keel', 'schemathesis');
// Deletes each schedule the fuzzer creates as soon as its answer is checked (see the file).
const hooks = path.join(root, 'test', 'fixtures', 'schemathesis-hooks.py');

const { env, workflowBundle } = useTemporal();
let server: RunningServer;
let s: SessionEnv;

beforeAll(async () => {
  s = await sessionEnv(env, workflowBundle, { name: 'ok', apiKeys: [KEY], rules: [{ name: 'ok', match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } }] }, {}, { ownWorkflowThread: true });
  const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
  server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN, KEEL_API_APPROVER: 'schemathesis' } });
});
afterAll(async () => {
  await server?.close();
});

/** Workflow task failures of the workflows the run started: a start input that passed the API's validation but wedges its workflow. */
async function workflowTaskFailures(): Promise<string[]> {
  const found: string[] = [];
  for await (const w of env.client.workflow.list({ query: `TaskQueue = '${s.taskQueue}'` })) {
    const history = await env.client.workflow.getHandle(w.workflowId).fetchHistory();
    const start = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    for (const e of history.events ?? []) {
      const failed = e.workflowTaskFailedEventAttributes;
      if (failed) found.push(`${w.workflowId}: ${failed.failure?.message ?? String(failed.cause)} (input ${start ? Buffer.from(start).toString('utf8').slice(0, 300) : '?'})`);
    }
  }
  return found;
}

async function terminateStarted() {
  // Schedules it created first (server/schedule-routes.ts): they would go on starting goals on this queue for the rest of the run.
  for await (const sched of env.client.schedule.list({ query: "KeelKind = 'schedule'" })) {
    const handle = env.client.schedule.getHandle(sched.scheduleId);
    if ((await handle.describe().catch(() => null))?.action.taskQueue === s.taskQueue) await handle.delete().catch(() => undefined);
  }
  for await (const w of env.client.workflow.list({ query: `TaskQueue = '${s.taskQueue}' AND ExecutionStatus = 'Running'` })) {
    await env.client.workflow.getHandle(w.workflowId).terminate('schemathesis run over').catch(() => undefined);
  }
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = killWhenTestEnds(spawn(command, args, { cwd: root, env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_HOOKS: hooks } }));
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('schemathesis against /openapi.json', () => {
  it('finds no server error and no response outside the schema', async () => {
    const examples = process.env.KEEL_SCHEMATHESIS_EXAMPLES ?? '5';
    const config = path.resolve(root, process.env.KEEL_SCHEMATHESIS_CONFIG ?? 'test/fixtures/schemathesis-short.toml');
    let wedged: string[] = [];
    const { code, output } = await s.run(async () => {
      try {
        return await run('bash', [
      'scripts/schemathesis.sh',
      // npm test's settings (test/fixtures/schemathesis-short.toml says why); api:fuzz names its own.
      '--config-file',
      config,
      'run',
      `${server.url}/openapi.json`,
      '--header',
      `Authorization: Bearer ${TEST_TOKEN}`,
      '--checks',
      'all',
      // A workspace must exist on the server's disk (client/workspace.ts, issue [2/9]); no
      // schema can say so, and the refusal is a 400 naming the field, which this check would
      // call "schema-valid data rejected" for every random path it draws.
      '--exclude-checks',
      'positive_data_acceptance',
      // Stateful testing follows ids from the list to other workflows; in `npm test` those
      // belong to other test files running at the same time, so it runs only in api:fuzz.
      '--phases',
      process.env.KEEL_SCHEMATHESIS_PHASES ?? 'examples,coverage,fuzzing',
      '--max-examples',
      examples,
      // One worker: hypothesis on Python 3.11 trips over its own threads (ast.parse).
      '--workers',
      '1',
      '--request-timeout',
      '30',
      // The API's own bound: a request waits up to 15 s for a worker, then answers 504.
      '--max-response-time',
      '20',
      '--seed',
      '17',
      // api:fuzz bounds the whole run by time instead of by the test's timeout.
      ...(process.env.KEEL_SCHEMATHESIS_MAX_TIME ? ['--max-time', process.env.KEEL_SCHEMATHESIS_MAX_TIME] : []),
      '--generation-database',
      'none',
      '--no-color',
      '--report',
      'junit',
      '--report-dir',
      reportDir,
        ]);
      } finally {
        wedged = await workflowTaskFailures();
        await terminateStarted();
      }
    });
    await fs.mkdir(reportDir, { recursive: true });
    await fs.writeFile(path.join(reportDir, 'output.txt'), output);
    expect(output, output).toMatch(/No issues found|passed/);
    expect(code, output).toBe(0);
    // Every request the API accepted started a workflow that runs: none failed a workflow task.
    expect(wedged).toEqual([]);
  }, 600_000 + Number(process.env.KEEL_SCHEMATHESIS_MAX_TIME ?? 0) * 1000);
});
