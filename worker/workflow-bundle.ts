// Which workflow code a worker runs: a bundle built ahead of time (`npm run build` writes
// dist/workflow-bundle.js; KEEL_WORKFLOW_BUNDLE names another), or — run from source —
// workflows/ bundled when the worker starts. A prebuilt bundle starts faster, uses less
// memory, and is exactly the code that was tested and shipped.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keelEnv } from '../shared/env';

declare const __KEEL_COMPILED__: boolean | undefined;

export class WorkflowBundleError extends Error {
  override readonly name = 'WorkflowBundleError';
}

/**
 * The one bundle `npm run build` writes. Tracing on or off, it is the same code: there is no
 * separate traced bundle (workflows/trace.ts says why).
 */
export const BUNDLE_FILE = 'workflow-bundle.js';

/**
 * The same code with the failure converter that encodes messages and stack traces
 * (worker/failure-converter.cjs), for workers with encryption keys. A bundle carries its
 * failure converter inside, and workflow code cannot read the environment to choose one,
 * so `npm run build` writes both and the worker picks.
 */
export const ENCODED_FAILURES_BUNDLE_FILE = 'workflow-bundle.encoded-failures.js';

/**
 * Workflow interceptor modules in every bundle Keel builds (the worker from source, `npm run
 * build`, the tests): Keel's own, which carry trace context in headers and send the
 * activation's sink calls as it concludes. Neither adds a command or a yield point.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = ['../workflows/trace-interceptors.ts', '../workflows/sink-interceptors.ts'].map((file) =>
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), file),
);

/** Text only the failure converter that encodes brings into a bundle (worker/failure-converter.cjs). */
const ENCODED_FAILURES_MARK = 'keel-failures-encoded';

export const PAYLOAD_CONVERTER_FILE = 'payload-converter.cjs';

/**
 * The prebuilt bundle's path, or null to bundle workflows/ from source. `encodedFailures`
 * (encryption keys are set): the bundle whose failures are encoded; a KEEL_WORKFLOW_BUNDLE
 * given by hand must then be that one.
 */
export function prebuiltWorkflowBundle(env: NodeJS.ProcessEnv = process.env, encodedFailures = false): string | null {
  const given = keelEnv(env, 'KEEL_WORKFLOW_BUNDLE')?.trim();
  if (given) {
    if (!existsSync(given)) throw new WorkflowBundleError(`KEEL_WORKFLOW_BUNDLE ${given} does not exist (build it with \`npm run build\`)`);
    if (encodedFailures && !readFileSync(given, 'utf8').includes(ENCODED_FAILURES_MARK)) {
      throw new WorkflowBundleError(
        `KEEL_WORKFLOW_BUNDLE ${given} would write workflow failures in the clear, and encryption keys are set: use ${ENCODED_FAILURES_BUNDLE_FILE} from \`npm run build\``,
      );
    }
    return path.resolve(given);
  }
  if (typeof __KEEL_COMPILED__ === 'undefined') return null;
  // Compiled: this module lives in dist/worker/main.js, the bundle in dist/.
  const beside = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', encodedFailures ? ENCODED_FAILURES_BUNDLE_FILE : BUNDLE_FILE);
  if (!existsSync(beside)) throw new WorkflowBundleError(`${beside} is missing: run \`npm run build\` again`);
  return beside;
}

/**
 * The workflows' payload converter as the compiled worker loads it (npm run build writes it
 * as CommonJS beside the bundles, which carry their own copy); null when run from source.
 */
export function compiledPayloadConverter(): string | null {
  if (typeof __KEEL_COMPILED__ === 'undefined') return null;
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', PAYLOAD_CONVERTER_FILE);
}

const source = (file: string) => path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', file);

/**
 * Modules every bundle Keel builds evaluates once per worker thread, shared by all its
 * workflows (the SDK's `preloadModules`; reuseV8Context, the default, is what shares them):
 * all of Keel's workflow code, and what it imports. Without this the SDK evaluates every
 * module anew for each workflow it creates or replays, and each cached workflow keeps its
 * own copy: Keel's machines, schemas and zod cost each cached session ≈ 1 MiB of heap
 * (docs/performance.md, "Schemas and tables once per worker"), and its workflows, policy
 * and tables another ~140 KiB ("Issue 53 (ninth part)").
 *
 * What that asks of the code:
 * - No state at module level: it would be every workflow's at once. What one workflow
 *   keeps beside its machines lives in a global slot of its own (workflows/workflow-local.ts:
 *   the trace's open spans, the activation's batched sink calls).
 * - The SDK deep-freezes what these modules export. So their zod schemas are lazySchema
 *   stand-ins (machines/lazy-schema.ts), zod's own defaults are set first
 *   (machines/zod-setup.ts), and no exported RegExp may be global or sticky, nor checked by
 *   zod's `.regex()` (each writes `lastIndex`, which throws once frozen); picomatch's are
 *   made safe by machines/policy/glob.ts. test/unit/machines/lazy-schema.test.ts checks what
 *   the bundle shares.
 */
export const PRELOADED_WORKFLOW_MODULES: readonly string[] = [
  'machines/zod-setup.ts',
  'machines/index.ts',
  'workflows/index.ts',
  // The goal and its agents, which workflows/index.ts imports when one starts.
  'workflows/goal.ts',
  'workflows/agent.ts',
  // The interceptors every bundle carries (WORKFLOW_INTERCEPTOR_MODULES).
  'workflows/trace-interceptors.ts',
  'workflows/sink-interceptors.ts',
].map(source);
