import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index';
import { TOOL_WORKER_OPTIONS } from '../activities/tools/index';
import { probeSandbox, sandboxStartupLine } from '../activities/tools/sandbox';
import { defaultCacheBudget, maxCachedWorkflows, workflowCacheFromEnv, type WorkflowCacheSize } from './cache';
import { keelDataConverter } from './encryption';
import { shutdownGraceMs } from './shutdown';
import { probeStore } from './store-probe';
import { keelTelemetrySink, type Telemetry } from './telemetry';
import { compiledPayloadConverter, prebuiltWorkflowBundle, WORKFLOW_INTERCEPTOR_MODULES } from './workflow-bundle';

export const workflowsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/index.ts');
/** Decoding never throws in workflow code (an undecodable signal would wedge it): see the module. */
export const payloadConverterPath = compiledPayloadConverter() ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/payload-converter.ts');

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
   * ≈ 3.5 MiB per session (worker/cache.ts). Default: KEEL_WORKFLOW_CACHE, else a budget of
   * 1 GiB (or a third of the V8 heap limit, if smaller).
   */
  workflowCache?: WorkflowCacheSize;
}

export interface KeelWorker {
  worker: Worker;
  /** Runs until shutdown (SIGINT/SIGTERM or worker.shutdown()), then releases MCP servers. */
  run(): Promise<void>;
}

export async function createKeelWorker(options: KeelWorkerOptions): Promise<KeelWorker> {
  // Said once at start, in one line: whether commands will run confined or be refused.
  const sandbox = await probeSandbox();
  (options.log ?? console.log)(sandboxStartupLine(sandbox));
  // The conversation store it sees must be the fleet's: else it refuses to start, in one line.
  const store = await probeStore({ connection: options.connection, namespace: options.namespace, taskQueue: options.taskQueue, ...(options.env ? { env: options.env } : {}) });
  (options.log ?? console.log)(store.line);
  const keelActivities = createActivities(options.env);
  const { activities } = keelActivities;
  const close = () => keelActivities.close();
  try {
    // The tolerant payload converter on this side too (a bundle the caller built carries its
    // own copy), and the encryption codec when keys are configured.
    // With keys: failure messages and stack traces encoded too (worker/failure-converter.cjs).
    const codec = await keelDataConverter(options.env, { failureConverterPath: path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'failure-converter.cjs') });
    const dataConverter = { ...(options.workflowBundle ? {} : { payloadConverterPath }), ...codec };
    const telemetry = options.telemetry;
    const prebuilt = options.workflowBundle ? null : prebuiltWorkflowBundle(options.env);
    const graceMs = shutdownGraceMs(options.env);
    const cached = maxCachedWorkflows(options.workflowCache ?? workflowCacheFromEnv(options.env ?? process.env) ?? defaultCacheBudget());
    const worker = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      identity: store.identity,
      ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : prebuilt ? { workflowBundle: { codePath: prebuilt } } : { workflowsPath }),
      // The workflow code never depends on telemetry: Keel's interceptors (trace context in
      // headers) are bundled whether tracing is on or not; a prebuilt bundle has them already.
      interceptors: {
        activity: telemetry?.workerOptions.interceptors?.activity ?? [],
        ...(options.workflowBundle || prebuilt ? {} : { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES] }),
      },
      activities,
      dataConverter,
      maxCachedWorkflows: cached,
      // Cancellation reaches an activity only with a heartbeat response; a short throttle
      // lets an interrupt stop a command or a model stream within a second.
      ...TOOL_WORKER_OPTIONS,
      // On shutdown: stop polling, let running activities finish this long, then cancel
      // them (they retry elsewhere); five more seconds for them to acknowledge.
      shutdownGraceTime: graceMs,
      shutdownForceTime: graceMs + 5_000,
      // Without telemetry the workflows' sinks are still there, doing nothing.
      sinks: telemetry?.workerOptions.sinks ?? keelTelemetrySink(null),
    });
    return {
      worker,
      async run() {
        try {
          await worker.run();
        } finally {
          await close();
        }
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}
