// What integration tests share: a connection to the fork's dev server, a fresh task
// queue per test, and the workflow code bundled once per run (test/setup/workflow-bundle.ts).
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { inject } from 'vitest';
import { ClosableConnection } from '../../client/grpc-retry';
import { temporalServers } from './temporal-servers';
import { waitForFile } from './wait-for-file';
import { payloadConverterPath, workflowsPath as keelWorkflowsPath } from '../../worker/worker';

/** In a test fork's own workers: workflows on the fork's thread, ~0.1 s of CPU per worker instead of ~0.76 (bench/worker-create.ts). */
export { WORKFLOW_DEADLOCK_TIMEOUT, WORKFLOWS_ON_CALLING_THREAD } from '../../worker/worker';
import { PRELOADED_WORKFLOW_MODULES, WORKFLOW_INTERCEPTOR_MODULES } from '../../worker/workflow-bundle';

export interface TemporalTestEnv {
  address: string;
  namespace: string;
  client: Client;
  nativeConnection: NativeConnection;
  close(): Promise<void>;
}

/** This fork's dev server (test/setup/temporal-server.ts starts one per fork). */
export function testTemporalAddress(): string {
  const { addresses } = temporalServers();
  const fork = Math.max(1, Number(process.env.VITEST_POOL_ID ?? 1) || 1);
  return addresses[(fork - 1) % addresses.length]!;
}

export async function connectTestEnv(): Promise<TemporalTestEnv> {
  const address = testTemporalAddress();
  const { namespace } = temporalServers();
  // Its gRPC retry stops before it closes (client/grpc-retry.ts): a retry timer firing on the
  // closed channel was an uncaught error in the test's fork.
  const connection = await ClosableConnection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    namespace,
    client: new Client({ connection, namespace }),
    nativeConnection,
    async close() {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${randomUUID()}`;
}

/**
 * The workflows at `workflowsPath`, bundled; call it from beforeAll. Keel's own workflows
 * (worker/worker.ts's workflowsPath) come from the run's one bundle (global setup); other
 * files are bundled once per run, by the first test file that asks (sharedFixtureBundle).
 * `preload: false`: nothing shared between workflows — for a fixture that changes a preloaded
 * module's table (frozen when shared), or one that imports none of them (Keel's preloaded
 * modules add ~2.7 s of CPU to a fixture's bundle). A fixture shares Keel's machines and
 * schemas only (FIXTURE_PRELOAD): preloading workflows/index.ts, as Keel's own bundle does,
 * would bundle every Keel workflow into each fixture, most of which import none of them.
 */
export async function bundle(workflowsPath: string, options: { preload?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const dir = inject('workflowBundleDir');
  if (path.resolve(workflowsPath) === path.resolve(keelWorkflowsPath) && dir) {
    const file = await keelWorkflowBundleFile();
    return readBundle(file);
  }
  const preload = options.preload !== false;
  return dir ? sharedFixtureBundle(dir, workflowsPath, preload) : bundleFixture(workflowsPath, preload);
}

/** Quiet, since webpack's report is noise here; the same payload converter and interceptors as the worker's (workflows/payload-converter.ts, workflows/trace-interceptors.ts). */
function bundleFixture(workflowsPath: string, preload: boolean): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, payloadConverterPath, workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES], preloadModules: preload ? FIXTURE_PRELOAD : [], logger: silentLogger });
}

/** What a fixture's bundle shares between its workflows: the machines/ entries of PRELOADED_WORKFLOW_MODULES. */
const FIXTURE_PRELOAD = PRELOADED_WORKFLOW_MODULES.filter((file) => file.includes(`${path.sep}machines${path.sep}`));

async function readBundle(file: string): Promise<WorkflowBundleWithSourceMap> {
  return { code: await readFile(file, 'utf8'), sourceMap: await readFile(`${file}.map`, 'utf8') };
}

/**
 * A fixture's bundle, built once per run in the run's bundle directory: several files bundle
 * the same fixture (llm-workflow, tools-workflow, smoke-workflow, versions/build-3), 1-4 s of
 * CPU each time. The first file to claim it builds it; the others, in any fork, wait for its
 * file, or fail with the builder's error. Like Keel's own bundle it is not rebuilt within a
 * run (vitest's watch mode: restart the run after editing a fixture).
 */
async function sharedFixtureBundle(dir: string, workflowsPath: string, preload: boolean): Promise<WorkflowBundleWithSourceMap> {
  const name = `fixture-${createHash('sha256').update(`${path.resolve(workflowsPath)}\0${preload}`).digest('hex').slice(0, 16)}.js`;
  const file = path.join(dir, name);
  const claim = await writeFile(`${file}.claim`, String(process.pid), { flag: 'wx' }).then(
    () => 'claimed' as const,
    (error: NodeJS.ErrnoException) => (error.code === 'EEXIST' ? ('taken' as const) : error),
  );
  if (claim instanceof Error) return bundleFixture(workflowsPath, preload);
  if (claim === 'taken') {
    const builder = (await readFile(`${file}.claim`, 'utf8').catch(() => '')) || '?';
    return readBundle(await waitForFile(dir, name, 150_000, `the bundle of ${workflowsPath}, which the test fork with pid ${builder} is building,`, `${name}.error`));
  }
  try {
    const built = await bundleFixture(workflowsPath, preload);
    await writeFile(`${file}.map`, built.sourceMap);
    await writeFile(`${file}.tmp`, built.code);
    await rename(`${file}.tmp`, file);
    return built;
  } catch (error) {
    await writeFile(`${file}.error`, `bundling ${workflowsPath} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    throw error;
  }
}

/**
 * The path of the run's one bundle of Keel's workflows (`workflows.js`, its map beside it),
 * once it is there: test/setup/workflow-bundle.ts builds it in a child process while the
 * first test files run. Fails with the bundler's error if bundling failed.
 */
export async function keelWorkflowBundleFile(timeoutMs = 150_000): Promise<string> {
  return waitForFile(inject('workflowBundleDir'), 'workflows.js', timeoutMs, "the run's workflow bundle");
}

/** Bundling is quiet in a test run (webpack's report is noise); errors still show. */
export const silentLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error(message: string, meta?: Record<string, unknown>) {
    console.error(message, meta);
  },
};

const historiesRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), '../histories');

/** With KEEL_RECORD_HISTORIES=1, saves a workflow's history in test/histories/<folder> for the replay test. */
export async function recordHistoryIn(folder: string, handle: WorkflowHandle, name: string): Promise<void> {
  if (!process.env.KEEL_RECORD_HISTORIES) return;
  const history = await handle.fetchHistory();
  await mkdir(path.join(historiesRoot, folder), { recursive: true });
  await writeFile(path.join(historiesRoot, folder, `${name}.json`), historyToJSON(history));
}

export interface EventFollower<T extends { kind: string }> {
  readonly entries: T[];
  kinds(): string[];
  waitFor(predicate: (entries: T[]) => boolean, timeoutMs?: number): Promise<T[]>;
}

/** Follows a workflow's event topic live from offset 0, as a client would. */
export function followEventTopic<T extends { kind: string }>(client: Client, workflowId: string, topicName: string): EventFollower<T> {
  const entries: T[] = [];
  const topic = WorkflowStreamClient.create(client, workflowId).topic<T>(topicName);
  void (async () => {
    try {
      for await (const item of topic.subscribe(0, { pollCooldown: 20 })) entries.push(item.data);
    } catch {
      // The workflow completed: the log is whole.
    }
  })();
  return {
    entries,
    kinds: () => entries.map((e) => e.kind),
    async waitFor(predicate, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(entries)) {
        if (Date.now() > deadline) throw new Error(`events did not arrive in ${timeoutMs} ms; got ${entries.map((e) => e.kind).join(', ')}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return entries;
    },
  };
}
