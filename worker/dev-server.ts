// Starts the official Temporal CLI's dev server (`temporal server start-dev`) as a child
// process and waits until it really answers. Used by `npm run dev` and the test harness.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { diesWithParent } from './dies-with-parent';
import { searchAttributeFlags } from './search-attributes';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resolverScript = path.join(projectRoot, 'scripts', 'temporal.sh');

export interface DevServerOptions {
  /** gRPC port; 0 picks a free one. */
  port: number;
  /** SQLite file for persistent state; in-memory when omitted. */
  dbFile?: string;
  /** Web UI port (0 picks a free one); the UI is disabled when omitted. */
  uiPort?: number;
  namespace?: string;
  /** How long to wait for the server to answer. Two busy cores need far more than 5 s. */
  readyTimeoutMs?: number;
  /**
   * Partitions per task queue (the server's default is four). The tests use one: they replace
   * a worker inside the same process (test/integration/session-evicted.test.ts), and with four
   * the first message after that waited 10 s on the stopped worker's sticky queue, then up to
   * 47 s more on the normal one (8.6-58 s in 16 of 30 runs); with one, no task waited on the
   * stopped worker's queue in 20 runs (8 still waited until ~8.7 s after the stop). A restart
   * of the worker *process* showed neither, with one partition or four (bench/restart-wait.ts).
   * Only for a new or in-memory database: lowering the partitions of one that has tasks
   * queued in the others strands them.
   */
  taskQueuePartitions?: number;
  /** Where the server's own log lines go; discarded when omitted. */
  onLog?: (line: string) => void;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl: string | undefined;
  version: string;
  process: ChildProcess;
  /** Stops the server and waits for the process to exit. */
  stop(): Promise<void>;
}

/** Path of the Temporal CLI, found or installed by scripts/temporal.sh. */
export async function resolveTemporalCli(which: 'path' | 'test-server-path' = 'path'): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('bash', [resolverScript, which], {
      env: process.env,
      maxBuffer: 1 << 20,
    });
    const found = stdout.trim().split('\n').pop();
    if (!found) throw new Error('the resolver printed no path');
    return found;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`Cannot find or install the Temporal ${which === 'path' ? 'CLI' : 'test server'}.\n${stderr}`.trim(), {
      cause: error,
    });
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

/** How often a server is started when another process keeps taking one of its ports first. */
const PORT_CLASH_ATTEMPTS = 3;

/**
 * Starts something on a port found free here, and again on another (PORT_CLASH_ATTEMPTS in
 * all) when `clashed` says the start failed because another process took the port first:
 * a port found free is free only until someone binds it.
 */
export async function startOnFreePort<T>(start: (port: number) => Promise<T>, clashed: (error: unknown) => boolean | Promise<boolean>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort());
    } catch (error) {
      if (attempt >= PORT_CLASH_ATTEMPTS || !(await clashed(error))) throw error;
    }
  }
}

/**
 * The server marks a run whose workflow tasks failed or timed out this many times in a row
 * (the `TemporalReportedProblems` search attribute, the Web UI's "Task Failures" view); Keel's
 * workers look for those marks to repair runs the SDK cannot replay (worker/replay-repair-sweep.ts).
 * Self-hosted servers leave it off unless configured; docker-compose's file sets the same.
 */
export const REPORTED_PROBLEMS_AFTER = 3;
const reportedProblemsFlags = ['--dynamic-config-value', `system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute=${REPORTED_PROBLEMS_AFTER}`];

function partitionFlags(partitions: number): string[] {
  return [`matching.numTaskqueueReadPartitions=${partitions}`, `matching.numTaskqueueWritePartitions=${partitions}`].flatMap((value) => ['--dynamic-config-value', value]);
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const cli = await resolveTemporalCli();
  const version = await promisify(execFile)(cli, ['--version']).then(
    ({ stdout }) => stdout.trim(),
    (error: Error) => {
      throw new Error(`the Temporal CLI at ${cli} does not run: ${error.message}`, { cause: error });
    },
  );
  // A port found free is only free until someone binds it: another process can take it before
  // the server does (tests start servers, workers and exporters side by side). The server then
  // exits with "address already in use", and ports we picked are picked again.
  // The server picks its HTTP port and its history, matching and worker services' ports the
  // same way (temporalio/cli internal/devserver MustGetFreePort), so a clash on one of those
  // is retried whatever the caller asked; a clash on a port the caller fixed is not.
  const fixed = [options.port, options.uiPort].filter((p): p is number => p !== undefined && p !== 0);
  for (let attempt = 1; ; attempt++) {
    const port = options.port === 0 ? await freePort() : options.port;
    const uiPort = options.uiPort === 0 ? await freePort() : options.uiPort;
    try {
      return await startOnce(cli, version, { ...options, port, uiPort });
    } catch (error) {
      const retry = error instanceof PortClash && !fixed.some((p) => error.line.includes(`:${p}:`)) && attempt < PORT_CLASH_ATTEMPTS;
      if (!retry) throw error;
    }
  }
}

/** The server exited because a port it was to listen on was already taken. */
class PortClash extends Error {
  constructor(
    message: string,
    /** The server's line that says so ("listen tcp 127.0.0.1:N: bind: address already in use"). */
    readonly line: string,
  ) {
    super(message);
  }
}

async function startOnce(cli: string, version: string, options: DevServerOptions): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  const port = options.port;
  const address = `127.0.0.1:${port}`;
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--namespace',
    namespace,
    '--log-level',
    'warn',
    ...searchAttributeFlags(),
    ...(options.taskQueuePartitions === undefined ? [] : partitionFlags(options.taskQueuePartitions)),
    ...reportedProblemsFlags,
  ];
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (options.uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));

  // Its own process group: a Ctrl-C in the terminal reaches our process first, so the
  // worker can drain before the server goes away. The exit hook covers a crash of ours.
  // OTEL_* are the worker's (`npm run dev` with tracing on): the Go server reads them too and
  // refuses to start with an exporter it lacks (`OTEL_TRACES_EXPORTER=console`).
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
  // The exit hook does not run when we are killed (SIGKILL, a CI time limit): the kernel's
  // parent-death signal does, and the server, in a group of its own, would outlive us.
  const [command, commandArgs] = diesWithParent(cli, args);
  const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env });
  // A binary that vanished or cannot run is an 'error' event, not an exit; unheard, it would
  // crash the process (a test run lost to `spawn … ENOENT`). The wait below reports it.
  let spawnError: Error | null = null;
  child.once('error', (error) => (spawnError = error));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const recent: string[] = [];
  // A panic's reason is its first line and the stack follows it: the last 40 lines lost the
  // reason of a clash on an internal port (CI: exit 2, only the stack shown).
  const first: string[] = [];
  let dropped = 0;
  let clash: string | null = null;
  const onLine = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      if (first.length < 10) first.push(line);
      else recent.push(line);
      if (recent.length > 40) {
        recent.shift();
        dropped++;
      }
      if (clash === null && /address already in use/i.test(line)) clash = line;
      options.onLog?.(line);
    }
  };
  const output = () => [...first, ...(dropped > 0 ? [`… (${dropped} lines)`] : []), ...recent].join('\n');
  child.stdout?.on('data', onLine);
  child.stderr?.on('data', onLine);

  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    process.off('exit', killOnExit);
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
  let lastError: unknown;
  for (;;) {
    if (spawnError !== null) {
      process.off('exit', killOnExit);
      throw new Error(`cannot run the Temporal CLI ${cli}: ${(spawnError as Error).message}`, { cause: spawnError });
    }
    if (child.exitCode !== null) {
      const message = `temporal server start-dev exited with code ${child.exitCode} before answering on ${address}:\n${output()}`;
      throw clash !== null ? new PortClash(message, clash) : new Error(message);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
      } finally {
        await connection.close();
      }
      break;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `temporal server start-dev did not answer on ${address} within ${options.readyTimeoutMs ?? 90_000} ms: ${String(lastError)}\n${output()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }

  return {
    address,
    namespace,
    uiUrl: options.uiPort === undefined ? undefined : `http://127.0.0.1:${options.uiPort}`,
    version,
    process: child,
    stop,
  };
}
