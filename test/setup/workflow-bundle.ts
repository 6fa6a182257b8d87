// Global setup of the integration project: Keel's workflows bundled ONCE per run (webpack
// takes 5–20 s on a busy machine, and 30 test files used to pay it each). The bundle is
// built by a child process (test/setup/workflow-bundle-build.ts) while the first test files
// run: vitest starts no test file before every project's global setup has returned, and the
// unit files, which run first, do not need it. The bundle's directory is provided at once;
// test/helpers/temporal.ts `keelWorkflowBundleFile()` (and `bundle(workflowsPath)`) wait for
// `workflows.js` to appear there, or fail with the child's error.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { sharedOnce } from './shared-setup';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Directory where `workflows.js` and `workflows.js.map` (the bundle of worker/worker.ts's workflowsPath) appear; `error.txt` if bundling failed. */
    workflowBundleDir: string;
  }
}

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

export default async function setup(project: TestProject) {
  const { value: dir, teardown } = await sharedOnce('workflow bundle', async () => {
    const started = Date.now();
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-test-bundle-'));
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'workflow-bundle-build.ts'), dir], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    const exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        if (code === 0) console.log(`workflow bundle: built once for the run in ${Date.now() - started} ms`);
        // A child that died without saying why (killed, crashed): the tests say so instead of waiting.
        else void fs.writeFile(path.join(dir, 'error.txt'), `bundling the workflows failed: the bundler exited with ${signal ?? `code ${code}`}`, { flag: 'wx' }).catch(() => {});
        resolve();
      });
      child.once('error', (error) => {
        void fs.writeFile(path.join(dir, 'error.txt'), `bundling the workflows failed: ${error.message}`, { flag: 'wx' }).catch(() => {});
        resolve();
      });
    });
    return {
      value: dir,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
        await fs.rm(dir, { recursive: true, force: true });
      },
    };
  });
  project.provide('workflowBundleDir', dir);
  return teardown;
}
