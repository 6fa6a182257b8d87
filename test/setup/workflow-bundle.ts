// Global setup of the integration project: Keel's workflows bundled ONCE per run (webpack
// takes 5–20 s on a busy machine, and 30 test files used to pay it each). The bundle is
// written to a temp file; test/helpers/temporal.ts `bundle(workflowsPath)` reads it from
// there, so test files need no change. Other workflow files (fixtures) are bundled per file.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { bundleWorkflowCode } from '@temporalio/worker';
import { payloadConverterPath, workflowsPath } from '../../worker/worker';
import { PRELOADED_WORKFLOW_MODULES, WORKFLOW_INTERCEPTOR_MODULES } from '../../worker/workflow-bundle';
import { sharedOnce } from './shared-setup';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Directory holding `workflows.js` and `workflows.js.map`: the bundle of worker/worker.ts's workflowsPath. */
    workflowBundleDir: string;
  }
}

/** The same options test/helpers/temporal.ts `bundle()` uses: one bundle serves both. */
function bundleKeelWorkflows() {
  const quiet = () => {};
  return bundleWorkflowCode({
    workflowsPath,
    payloadConverterPath,
    // Keel's trace interceptors, as the worker bundles them (worker/workflow-bundle.ts).
    workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES],
    // Keel's pure modules once per worker, as the worker bundles them.
    preloadModules: [...PRELOADED_WORKFLOW_MODULES],
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: (message, meta) => console.error(message, meta) },
  });
}

export default async function setup(project: TestProject) {
  const { value: dir, teardown } = await sharedOnce('workflow bundle', async () => {
    const started = Date.now();
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-test-bundle-'));
    const bundle = await bundleKeelWorkflows();
    await fs.writeFile(path.join(dir, 'workflows.js'), bundle.code);
    await fs.writeFile(path.join(dir, 'workflows.js.map'), bundle.sourceMap);
    console.log(`workflow bundle: built once for the run in ${Date.now() - started} ms`);
    return { value: dir, stop: () => fs.rm(dir, { recursive: true, force: true }) };
  });
  project.provide('workflowBundleDir', dir);
  return teardown;
}
