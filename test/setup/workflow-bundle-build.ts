// Run by test/setup/workflow-bundle.ts in a child process: bundles Keel's workflows into the
// directory given as the first argument. The map is written first and `workflows.js` renamed
// into place last, so a test that sees `workflows.js` sees the whole bundle; a failure is
// written to `error.txt` for the tests to show (test/helpers/temporal.ts keelWorkflowBundleFile).
import fs from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { KEEL_BUNDLE_OPTIONS } from '../../worker/worker';

const dir = process.argv[2];
if (!dir) throw new Error('usage: workflow-bundle-build.ts <dir>');
const quiet = () => {};
try {
  // The same options test/helpers/temporal.ts `bundle()` uses: one bundle serves both.
  const bundle = await bundleWorkflowCode({
    ...KEEL_BUNDLE_OPTIONS,
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: (message, meta) => console.error(message, meta) },
  });
  await fs.writeFile(path.join(dir, 'workflows.js.map'), bundle.sourceMap);
  await fs.writeFile(path.join(dir, 'workflows.js.tmp'), bundle.code);
  await fs.rename(path.join(dir, 'workflows.js.tmp'), path.join(dir, 'workflows.js'));
} catch (error) {
  await fs.writeFile(path.join(dir, 'error.txt'), `bundling the workflows failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
}
