// Which workflow code a worker runs: a bundle built ahead of time (`npm run build` writes
// dist/workflow-bundle.js; KEEL_WORKFLOW_BUNDLE names another), or — run from source —
// workflows/ bundled when the worker starts. A prebuilt bundle starts faster, uses less
// memory, and is exactly the code that was tested and shipped.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keelEnv } from './env';

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
 * Workflow interceptor modules in every bundle Keel builds (the worker from source, `npm run
 * build`, the tests): Keel's own, which only carry trace context in headers.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/trace-interceptors.ts')];

export const PAYLOAD_CONVERTER_FILE = 'payload-converter.cjs';

/** The prebuilt bundle's path, or null to bundle workflows/ from source. */
export function prebuiltWorkflowBundle(env: NodeJS.ProcessEnv = process.env): string | null {
  const given = keelEnv(env, 'KEEL_WORKFLOW_BUNDLE')?.trim();
  if (given) {
    if (!existsSync(given)) throw new WorkflowBundleError(`KEEL_WORKFLOW_BUNDLE ${given} does not exist (build it with \`npm run build\`)`);
    return path.resolve(given);
  }
  if (typeof __KEEL_COMPILED__ === 'undefined') return null;
  // Compiled: this module lives in dist/worker/main.js, the bundle in dist/.
  const beside = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', BUNDLE_FILE);
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
