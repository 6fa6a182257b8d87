import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, type NativeConnection, type ReplayWorkerOptions, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index';
import { ACTIVITY_WORKER_OPTIONS, type RunnableTool } from '../activities/tools/index';
import { commandLimitsLine } from '../activities/tools/command-cgroup';
import { probeSandbox, sandboxStartupLine } from '../activities/tools/sandbox';
import { defaultCacheBudget, maxCachedWorkflows, workflowCacheFromEnv, type WorkflowCacheSize } from './cache';
import { keelDataConverter } from '../shared/encryption';
import { shutdownGraceMs } from './shutdown';
import { startReplayRepairSweep, sweepIntervalMs } from './replay-repair-sweep';
import { deploymentLine, resolveDeployment } from './deployment';
import { probeStore, StoreProbeError } from './store-probe';
import { workspaceHostLine, workspaceHostOf } from './workspace-host';
import { workspaceQueue } from '../workflows/workspace-host';
import { keelWorkflowSinks, type Telemetry } from './telemetry';
import { compiledPayloadConverter, prebuiltWorkflowBundle, PRELOADED_WORKFLOW_MODULES, WORKFLOW_INTERCEPTOR_MODULES } from './workflow-bundle';

export const workflowsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/index.ts');
/** Decoding never throws in workflow code (an undecodable signal would wedge it): see the module. */
export const payloadConverterPath = compiledPayloadConverter() ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/payload-converter.ts');

/**
 * What Keel's workflows are bundled with, wherever a bundle is built from source outside
 * the worker (the tests' one bundle, chaos, the benches): the worker's own payload
 * converter, trace interceptors and preloaded modules, so every bundle is the worker's.
 */
export const KEEL_BUNDLE_OPTIONS = {
  workflowsPath,
  payloadConverterPath,
  workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES],
  preloadModules: [...PRELOADED_WORKFLOW_MODULES],
};

/**
 * How long one call into a workflow's sandbox may run before the SDK's deadlock detector
 * stops it. The SDK's 5 s is reached by an ordinary activation on a busy machine (a session's
 * 446-event replay took 22 s at load 25 on 2 cores), and a sandbox timeout that fires while
 * the workflow runs its microtasks aborts the whole worker process ("async hook stack has
 * become corrupted": temporalio/sdk-typescript#939, nodejs/node#38503) — `npm run fuzz` died
 * so under load. A minute still catches a workflow stuck in a loop.
 */
export const WORKFLOW_DEADLOCK_TIMEOUT = '60s';

/**
 * Worker options that run a worker's workflows on the calling thread (KeelWorkerOptions
 * `workflowsOnCallingThread`): the SDK's debugMode. Its deadlock detector is off there unless
 * the timeout is given, so it is given, as for the thread pool. A workflow stuck in a loop
 * would otherwise block the calling thread for good (test/integration/smoke.test.ts proves it
 * fails its task instead). The SDK reads `isolateExecutionTimeout` but does not declare it in
 * WorkerOptions yet, hence the type.
 */
export const WORKFLOWS_ON_CALLING_THREAD: Pick<WorkerOptions, 'debugMode'> & { isolateExecutionTimeout: string } = { debugMode: true, isolateExecutionTimeout: WORKFLOW_DEADLOCK_TIMEOUT };

export interface KeelWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A prebuilt bundle (tests build it once per file); else dist/workflow-bundle.js when compiled, else bundled from source. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  env?: NodeJS.ProcessEnv;
  /** Where the start-up line about the command sandbox goes (default console.log). */
  log?: (line: string) => void;
  /** Tracing and metrics (worker/telemetry.ts); none when omitted. */
  telemetry?: Telemetry;
  /**
   * How many workflows stay cached: a count, or a memory budget turned into a count at
   * 512 KiB per session (worker/cache.ts). Default: KEEL_WORKFLOW_CACHE, else a budget of
   * 1 GiB (or a third of the V8 heap limit, if smaller).
   */
  workflowCache?: WorkflowCacheSize;
  /**
   * How long a workflow task waits on this worker's own (sticky) queue before any worker may
   * take it: what a worker killed mid-turn costs its sessions before another picks them up.
   * Default Temporal's 10 s; the tests that kill workers use 1 s.
   */
  stickyQueueTimeoutMs?: number;
  /**
   * Runs the workflows on the calling thread, not on a worker thread of their own (the SDK's
   * debugMode, with its 5 s deadlock detector kept). For a process that makes many short-lived
   * workers, like a test fork: a worker with a thread cost 0.76 s of CPU (p50; the thread loads
   * Node, the SDK and tsx again and compiles the bundle again), one on the calling thread
   * 0.10 s, since V8 compiles the bundle once per process (bench/worker-create.ts). Default false: a
   * long-lived worker keeps workflow activations off the thread its activities run on.
   */
  workflowsOnCallingThread?: boolean;
  /**
   * The worker's own tools, offered to the model after the built-in ones: each made with one
   * `defineTool` call (activities/tools/define-tool.ts; docs/adding-a-tool.md). Every worker
   * of a task queue must have the same ones.
   */
  tools?: readonly RunnableTool[];
}

export interface KeelWorker {
  worker: Worker;
  /** With KEEL_WORKSPACE_HOST: the activity worker of this host's workspaces (worker/workspace-host.ts). */
  hostWorker: Worker | null;
  /**
   * Runs until shutdown (SIGINT/SIGTERM or worker.shutdown()), then releases MCP servers.
   * Restart by restarting the process: a new worker made inside the same process after this
   * one stopped waited up to ~9 s for the sessions' next tasks (up to 58 s on a server with
   * four partitions per task queue; test/integration/session-evicted.test.ts), while a new
   * process took 0.4-0.7 s (bench/restart-wait.ts).
   */
  run(): Promise<void>;
}

export async function createKeelWorker(options: KeelWorkerOptions): Promise<KeelWorker> {
  // Said once at start, in one line: whether commands will run confined or be refused.
  const sandbox = await probeSandbox();
  (options.log ?? console.log)(sandboxStartupLine(sandbox));
  // And which limits hold per command tree here (cgroups), and what stands in where none can.
  if (sandbox.ok) (options.log ?? console.log)(await commandLimitsLine());
  // The conversation store it sees must be the fleet's: else it refuses to start, in one line.
  const store = await probeStore({ connection: options.connection, namespace: options.namespace, taskQueue: options.taskQueue, ...(options.env ? { env: options.env } : {}), ...(options.log ? { log: options.log } : {}) });
  (options.log ?? console.log)(store.line);
  let workspaceHost: string | null;
  try {
    workspaceHost = workspaceHostOf(options.env);
  } catch (error) {
    throw new StoreProbeError(`keel worker: ${(error as Error).message}`);
  }
  if (workspaceHost !== null) (options.log ?? console.log)(workspaceHostLine(options.taskQueue, workspaceHost));
  const keelActivities = createActivities(options.env, options.tools ? { tools: options.tools } : {});
  const { activities } = keelActivities;
  const close = () => keelActivities.close();
  try {
    // The tolerant payload converter on this side too (a bundle the caller built carries its
    // own copy), and the encryption codec when keys are configured.
    // With keys: failure messages and stack traces encoded too (worker/failure-converter.cjs).
    const codec = await keelDataConverter(options.env, { failureConverterPath: path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'failure-converter.cjs') });
    const dataConverter = { ...(options.workflowBundle ? {} : { payloadConverterPath }), ...codec };
    const telemetry = options.telemetry;
    // With keys, the prebuilt bundle whose workflow failures are encoded too.
    const prebuilt = options.workflowBundle ? null : prebuiltWorkflowBundle(options.env, 'failureConverterPath' in codec);
    const graceMs = shutdownGraceMs(options.env);
    const cached = maxCachedWorkflows(options.workflowCache ?? workflowCacheFromEnv(options.env ?? process.env) ?? defaultCacheBudget());
    // KEEL_DEPLOYMENT_NAME: a versioned worker (worker/deployment.ts), its build id the hash of
    // the bundle it runs unless KEEL_BUILD_ID names one; from source, that bundle is made here.
    const versioning = await resolveDeployment(options.env ?? process.env, options.workflowBundle ?? (prebuilt ? { codePath: prebuilt } : undefined), () =>
      bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, ...('failureConverterPath' in codec ? { failureConverterPath: codec.failureConverterPath } : {}), logger: quietBundler }),
    );
    if (versioning.deployment) (options.log ?? console.log)(deploymentLine(versioning.deployment));
    const given = options.workflowBundle ?? (versioning.deployment && !prebuilt ? versioning.workflowBundle : undefined);
    const worker = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      identity: store.identity,
      ...(given ? { workflowBundle: given } : prebuilt ? { workflowBundle: { codePath: prebuilt } } : { workflowsPath }),
      ...(versioning.deployment ? { workerDeploymentOptions: versioning.deployment } : {}),
      // The workflow code never depends on telemetry: Keel's interceptors (trace context in
      // headers) are bundled whether tracing is on or not; a prebuilt bundle has them already.
      interceptors: {
        activity: telemetry?.workerOptions.interceptors?.activity ?? [],
        ...(given || prebuilt ? {} : { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] }),
      },
      // Bundled from source: Keel's pure modules evaluated once per worker thread, not per workflow.
      ...(given || prebuilt ? {} : { bundlerOptions: { preloadModules: [...PRELOADED_WORKFLOW_MODULES] } }),
      activities,
      dataConverter,
      maxCachedWorkflows: cached,
      ...(options.workflowsOnCallingThread ? WORKFLOWS_ON_CALLING_THREAD : { isolateExecutionTimeout: WORKFLOW_DEADLOCK_TIMEOUT }),
      ...(options.stickyQueueTimeoutMs === undefined ? {} : { stickyQueueScheduleToStartTimeout: options.stickyQueueTimeoutMs }),
      // Cancellation reaches an activity only with a heartbeat response; a short throttle
      // lets an interrupt stop a command or a model stream within a second.
      ...ACTIVITY_WORKER_OPTIONS,
      // On shutdown: stop polling, let running activities finish this long, then cancel
      // them (they retry elsewhere); five more seconds for them to acknowledge.
      shutdownGraceTime: graceMs,
      shutdownForceTime: graceMs + 5_000,
      // Without telemetry the workflows' sinks are still there, doing nothing.
      sinks: telemetry?.workerOptions.sinks ?? keelWorkflowSinks(null),
    });
    // The workspaces on this host's disk: their activities come on a queue of their own.
    const hostWorker =
      workspaceHost === null
        ? null
        : await Worker.create({
            connection: options.connection,
            namespace: options.namespace,
            taskQueue: workspaceQueue(options.taskQueue, workspaceHost),
            identity: store.identity,
            activities,
            dataConverter,
            interceptors: { activity: telemetry?.workerOptions.interceptors?.activity ?? [] },
            ...ACTIVITY_WORKER_OPTIONS,
            shutdownGraceTime: graceMs,
            shutdownForceTime: graceMs + 5_000,
          });
    // The runs the SDK cannot replay for its known reason are repaired by every worker of the
    // queue (worker/replay-repair-sweep.ts), replayed with this worker's own code.
    const sweepMs = sweepIntervalMs(options.env);
    const replayOptions = memo(() => keelReplayOptions(options.env, given));
    return {
      worker,
      hostWorker,
      async run() {
        const sweep = startReplayRepairSweep({
          client: new Client({ connection: options.connection, namespace: options.namespace }),
          taskQueue: options.taskQueue,
          replay: replayOptions,
          intervalMs: sweepMs,
          log: options.log ?? console.log,
          ...(versioning.deployment ? { version: `${versioning.deployment.version.deploymentName}:${versioning.deployment.version.buildId}` } : {}),
        });
        try {
          if (hostWorker === null) await worker.run();
          else {
            // Either one stopping (a signal stops both; a test stops `worker`) stops the other.
            const stop = (w: Worker) => {
              if (w.getState() === 'RUNNING') w.shutdown();
            };
            await Promise.all([worker.run().finally(() => stop(hostWorker)), hostWorker.run().finally(() => stop(worker))]);
          }
        } finally {
          sweep.stop();
          await close();
        }
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Keel's workflow code and converters for replaying a history here, as a worker with the same
 * environment runs it: the given bundle, else the prebuilt one, else bundled from source (the
 * replay repair's check, worker/replay-repair.ts; `keel repair`).
 */
export async function keelReplayOptions(env: NodeJS.ProcessEnv | undefined, workflowBundle?: WorkerOptions['workflowBundle']): Promise<ReplayWorkerOptions> {
  const codec = await keelDataConverter(env, { failureConverterPath: path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'failure-converter.cjs') });
  const prebuilt = workflowBundle ? null : prebuiltWorkflowBundle(env, 'failureConverterPath' in codec);
  // A bundle (given, or KEEL_WORKFLOW_BUNDLE, or dist/'s) carries its own payload converter, as for
  // a worker: the source converter's path (a .ts file) is for bundling here only — a process
  // without tsx (the compiled CLI) could not load it.
  const given = workflowBundle ?? (prebuilt ? { codePath: prebuilt } : null);
  return {
    workflowBundle: given ?? (await bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, logger: quietBundler })),
    dataConverter: { ...(given ? {} : { payloadConverterPath }), ...codec },
    sinks: keelWorkflowSinks(null),
  };
}

function memo<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | null = null;
  return () => (made ??= make().catch((error: unknown) => {
    made = null;
    throw error;
  }));
}

/** The bundler's report is noise in a worker's log; its errors are thrown. */
const quietBundler = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
