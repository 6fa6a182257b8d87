// `npm run demo`: Keel's first command on a fresh machine. Uses TEMPORAL_ADDRESS when set,
// else starts an embedded Temporal dev server (with the Web UI); starts a Keel worker in
// this process; with no ANTHROPIC_API_KEY plays the model with the stand-in and the bundled
// script (client/demo/goal-demo.yaml) and says so; runs a real goal in a fresh temp
// workspace (files written, `node --test` run, the critic reviewing) with the live view;
// approves everything itself with --yes or when nobody can answer; prints the report and
// stops everything it started. Exits 0 when the goal is met; 3 when it is not (a goal the
// demo cannot finish — blocked on a failed task — is cancelled, and the reason printed);
// 1 before starting anything when run_command's sandbox cannot work here; 128 + the
// signal's number after SIGINT / SIGTERM, once everything it started has stopped.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { probeSandbox } from '../activities/tools/sandbox';
import { startStandin } from '../standin/server';
import { loadScenario } from '../standin/scenario';
import { loadWorkerConfig } from '../worker/config';
import { type DevServer, startDevServer } from '../worker/dev-server';
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

// The worker's own INFO lines (and webpack's bundle report) would bury the live view. The
// demo handles SIGINT / SIGTERM itself (below), so the runtime installs no handlers of its own:
// it would stop the worker and leave the demo waiting on a goal nobody runs.
Runtime.install({ logger: new DefaultLogger(process.env.KEEL_LOG_LEVEL === 'DEBUG' ? 'DEBUG' : 'WARN'), shutdownSignals: [] });

/** Aborted by SIGINT / SIGTERM: every step checks it, and the live view stops following. */
const stopping = new AbortController();
/** Read through a function: TypeScript cannot see a signal handler assign it. */
let stoppedBy: NodeJS.Signals | null = null;
const stopSignal = (): NodeJS.Signals | null => stoppedBy;
const SIGNAL_NUMBER: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 2, SIGTERM: 15 };
let stoppedAt = 0;
const onSignal = (signal: NodeJS.Signals) => {
  // Ctrl-C in a terminal reaches this process twice (from the terminal, and forwarded by npm).
  if (stoppedBy !== null && Date.now() - stoppedAt < 1_000) return;
  if (stoppedBy !== null) {
    // A second signal: stop now. The dev server's exit hook (worker/dev-server.ts) kills it.
    log(`keel demo: ${signal} again; exiting at once.`);
    process.exit(128 + (SIGNAL_NUMBER[signal] ?? 0));
  }
  stoppedBy = signal;
  stoppedAt = Date.now();
  log(`keel demo: ${signal}; stopping what it started…`);
  stopping.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

class Interrupted extends Error {}
const checkpoint = () => {
  if (stopping.signal.aborted) throw new Interrupted();
};

const cleanup: Array<() => Promise<unknown>> = [];
let exitCode: number = EXIT.error;
try {
  exitCode = await main();
} catch (error) {
  if (!(error instanceof Interrupted)) log(`keel demo: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
}
const signalled = stopSignal();
if (signalled !== null) exitCode = 128 + (SIGNAL_NUMBER[signalled] ?? 0);
process.exit(exitCode);

async function main(): Promise<number> {
  // Before anything starts: the goal runs `node --test`, which needs run_command's sandbox.
  // (`npm run demo` installs bubblewrap first, as `npm test` does: scripts/system-packages.sh.)
  const sandbox = await probeSandbox();
  if (!sandbox.ok) {
    log(`keel demo: cannot run: run_command's sandbox is unavailable here (${sandbox.reason}); nothing was started.`);
    return EXIT.error;
  }
  const config = loadWorkerConfig();
  let server: DevServer | null = null;
  if (!process.env.TEMPORAL_ADDRESS) {
    log('keel demo: starting an embedded Temporal dev server (in memory)…');
    server = await startDevServer({ port: 0, uiPort: 0 });
    const started = server;
    cleanup.push(() => started.stop());
    config.connection.address = server.address;
    config.namespace = server.namespace;
  }
  checkpoint();
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
  checkpoint();
  log('keel demo: starting a Keel worker (bundling the workflows takes a few seconds)…');
  const keelWorker = await createKeelWorker({ connection, namespace: config.namespace, taskQueue, env: workerEnv, log });
  const running = keelWorker.run();
  cleanup.push(async () => {
    if (keelWorker.worker.getState() === 'RUNNING') keelWorker.worker.shutdown();
    await running;
  });
  checkpoint();

  const keel = await KeelClient.connect({ address: config.connection.address, namespace: config.namespace, taskQueue });
  cleanup.push(() => keel.close());
  const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-demo-')));
  const goal = await keel.startGoal(GOAL, { workspace, maxStepsPerTask: 12, limits: { costUsd: 2 } });
  // Stopped early (a signal): the goal goes too, not left on a server that outlives the demo.
  cleanup.push(async () => {
    const signal = stopSignal();
    if (signal !== null) await withTimeout(goal.cancel(`the demo got ${signal}`), 5_000).catch(() => undefined);
  });
  log(`keel demo: goal ${goal.id} in ${workspace}`);
  if (server?.uiUrl) log(`keel demo: watch it in the Web UI: ${server.uiUrl}/namespaces/${config.namespace}/workflows/${goal.id}`);
  if (!interactive) log('keel demo: nobody to ask here, so every approval is answered yes (--yes).');

  const ask = interactive ? new LineReader() : null;
  let result;
  try {
    // Blocked on a failed task: the demo has nobody to resolve it, so it cancels the goal.
    result = await followGoal(goal, { out, yes: !interactive, ask, signal: stopping.signal, whenBlocked: 'cancel' });
  } finally {
    ask?.close();
  }
  if (!result) return EXIT.error;
  if (out.json) out.emit({ ...result, workspace });
  else {
    for (const line of reportLines(result, out)) out.line(line);
    const files = (await fs.readdir(workspace)).filter((f) => !f.startsWith('.'));
    out.line(`  workspace: ${workspace} (${files.join(', ')})`);
    if (server?.uiUrl) out.line(`  Web UI: ${server.uiUrl}/namespaces/${config.namespace}/workflows/${goal.id} (stops with the demo)`);
  }
  if (result.verdict !== 'goal_met') log(`keel demo: the goal was not met: ${result.summary}`);
  log('keel demo: shutting down what it started.');
  return result.verdict === 'goal_met' ? EXIT.ok : EXIT.notMet;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}
