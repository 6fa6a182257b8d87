// `npm run demo`: Keel's first command on a fresh machine. Uses TEMPORAL_ADDRESS when set,
// else starts an embedded Temporal dev server (with the Web UI); starts a Keel worker in
// this process; with no ANTHROPIC_API_KEY plays the model with the stand-in and the bundled
// script (client/demo/goal-demo.yaml) and says so; runs a real goal in a fresh temp
// workspace (files written, `node --test` run, the critic reviewing) with the live view;
// approves everything itself with --yes or when nobody can answer; prints the report and
// stops everything it started. Exits 0 when the goal is met.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { startStandin } from '../standin/server';
import { loadScenario } from '../standin/scenario';
import { loadWorkerConfig } from '../worker/config';
import { type DevServer, freePort, startDevServer } from '../worker/dev-server';
import { createKeelWorker } from '../worker/worker';
import { followGoal, reportLines } from './cli/goal-view';
import { EXIT, LineReader, Output } from './cli/output';
import { KeelClient } from './keel-client';

const here = path.dirname(fileURLToPath(import.meta.url));
const GOAL = 'Create slugify.mjs exporting slugify(text) that turns a title into a URL slug, tests with node:test that pass when run with `node --test`, and a README.';
const DEMO_KEY = 'sk-ant-demo';

const args = process.argv.slice(2);
const out = new Output(args.includes('--json'));
const interactive = Boolean(process.stdin.isTTY) && !args.includes('--yes') && !out.json;
const log = (line: string) => (out.json ? process.stderr.write(`${line}\n`) : out.line(line));

// The worker's own INFO lines (and webpack's bundle report) would bury the live view.
Runtime.install({ logger: new DefaultLogger(process.env.KEEL_LOG_LEVEL === 'DEBUG' ? 'DEBUG' : 'WARN') });

const cleanup: Array<() => Promise<unknown>> = [];
let exitCode: number = EXIT.error;
try {
  exitCode = await main();
} catch (error) {
  log(`keel demo: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
}
process.exit(exitCode);

async function main(): Promise<number> {
  const config = loadWorkerConfig();
  let server: DevServer | null = null;
  if (!process.env.TEMPORAL_ADDRESS) {
    log('keel demo: starting an embedded Temporal dev server (in memory)…');
    server = await startDevServer({ port: 0, uiPort: await freePort() });
    const started = server;
    cleanup.push(() => started.stop());
    config.connection.address = server.address;
    config.namespace = server.namespace;
  }
  log(`keel demo: Temporal at ${config.connection.address} (namespace ${config.namespace})`);

  let workerEnv: NodeJS.ProcessEnv = process.env;
  if (!process.env.ANTHROPIC_API_KEY) {
    const standin = await startStandin({ scenario: await loadScenario(path.join(here, 'demo', 'goal-demo.yaml')) });
    cleanup.push(() => standin.close());
    workerEnv = { ...process.env, ANTHROPIC_API_KEY: DEMO_KEY, ANTHROPIC_BASE_URL: standin.url };
    log(out.yellow('keel demo: no ANTHROPIC_API_KEY, so the model is SIMULATED: a local stand-in plays a scripted planner, agents and critic.'));
    log('           The workflows, tools, files, commands and approvals are real. Set ANTHROPIC_API_KEY to use Claude.');
  } else log('keel demo: using Claude (ANTHROPIC_API_KEY is set).');

  // Its own queue unless told: another worker on `keel` would not have the stand-in.
  const taskQueue = process.env.KEEL_TASK_QUEUE || `keel-demo-${process.pid}-${Date.now().toString(36)}`;
  const connection = await NativeConnection.connect(config.connection);
  cleanup.push(() => connection.close());
  log('keel demo: starting a Keel worker (bundling the workflows takes a few seconds)…');
  const keelWorker = await createKeelWorker({ connection, namespace: config.namespace, taskQueue, env: workerEnv });
  const running = keelWorker.run();
  cleanup.push(async () => {
    if (keelWorker.worker.getState() === 'RUNNING') keelWorker.worker.shutdown();
    await running;
  });

  const keel = await KeelClient.connect({ address: config.connection.address, namespace: config.namespace, taskQueue });
  cleanup.push(() => keel.close());
  const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-demo-')));
  const goal = await keel.startGoal(GOAL, { workspace, maxStepsPerTask: 12, limits: { costUsd: 2 } });
  log(`keel demo: goal ${goal.id} in ${workspace}`);
  if (server?.uiUrl) log(`keel demo: watch it in the Web UI: ${server.uiUrl}/namespaces/${config.namespace}/workflows/${goal.id}`);
  if (!interactive) log('keel demo: nobody to ask here, so every approval is answered yes (--yes).');

  const ask = interactive ? new LineReader() : null;
  // Ctrl-C stops the demo and everything it started (the goal goes with the embedded server).
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  let result;
  try {
    result = await followGoal(goal, { out, yes: !interactive, ask, signal: abort.signal });
  } finally {
    process.off('SIGINT', onSigint);
    ask?.close();
  }
  if (!result) {
    log('keel demo: interrupted; shutting down what it started.');
    return EXIT.detached;
  }
  if (out.json) out.emit({ ...result, workspace });
  else {
    for (const line of reportLines(result, out)) out.line(line);
    const files = (await fs.readdir(workspace)).filter((f) => !f.startsWith('.'));
    out.line(`  workspace: ${workspace} (${files.join(', ')})`);
    if (server?.uiUrl) out.line(`  Web UI: ${server.uiUrl}/namespaces/${config.namespace}/workflows/${goal.id} (stops with the demo)`);
    out.line('keel demo: shutting down what it started.');
  }
  return result.verdict === 'goal_met' ? EXIT.ok : EXIT.notMet;
}
