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

/** The file names `npm run build` writes: with tracing, the bundle carries Temporal's OpenTelemetry workflow interceptors. */
export const BUNDLE_FILES = { plain: 'workflow-bundle.js', tracing: 'workflow-bundle-otel.js' } as const;

export const PAYLOAD_CONVERTER_FILE = 'payload-converter.cjs';

/** The prebuilt bundle's path, or null to bundle workflows/ from source. */
export function prebuiltWorkflowBundle(env: NodeJS.ProcessEnv = process.env, { tracing = false } = {}): string | null {
  const given = keelEnv(env, 'KEEL_WORKFLOW_BUNDLE')?.trim();
  if (given) {
    if (!existsSync(given)) throw new WorkflowBundleError(`KEEL_WORKFLOW_BUNDLE ${given} does not exist (build it with \`npm run build\`)`);
    return path.resolve(given);
  }
  if (typeof __KEEL_COMPILED__ === 'undefined') return null;
  // Compiled: this module lives in dist/worker/main.js, the bundle in dist/.
  const beside = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', tracing ? BUNDLE_FILES.tracing : BUNDLE_FILES.plain);
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
