// `npm run build`: the worker as plain JavaScript in dist/, the way Temporal's production
// sample ships it. esbuild compiles worker/main.ts and worker/healthcheck.ts (with Keel's
// own modules; npm packages stay imports), and the workflow bundle is built here once,
// with the same bundler the worker would run at every start, into dist/workflow-bundle.js.
// `npm start` (and the Docker image) then runs `node dist/worker/main.js`: no tsx, no
// webpack at start. The web console (server/console/src, .tsx) is compiled here too, into
// dist/console/app.js, the file `keel serve` serves (server/console-bundle.ts).
import { copyFile, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { build } from 'esbuild';
import { esmSubpaths } from './esbuild-plugins';
import { consoleBuildOptions } from '../server/console-bundle';
import { payloadConverterPath as SOURCE_PAYLOAD_CONVERTER, workflowsPath } from '../worker/worker';
import { BUNDLE_FILE, ENCODED_FAILURES_BUNDLE_FILE, PAYLOAD_CONVERTER_FILE, PRELOADED_WORKFLOW_MODULES, WORKFLOW_INTERCEPTOR_MODULES } from '../worker/workflow-bundle';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Another output directory may be given (tests build their own copy, under the project so
// that the compiled code still finds node_modules).
const dist = path.resolve(root, process.argv[2] ?? 'dist');
const started = Date.now();

await rm(dist, { recursive: true, force: true });
await build({
  // The worker, its health check, and the console and API server (docker-compose's `console`).
  entryPoints: { 'worker/main': 'worker/main.ts', 'worker/healthcheck': 'worker/healthcheck.ts', 'server/serve': 'server/serve-main.ts' },
  absWorkingDir: root,
  outdir: dist,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  // Tells worker/workflow-bundle.ts that the prebuilt bundle sits beside the compiled code.
  define: { __KEEL_COMPILED__: 'true' },
  logLevel: 'warning',
  plugins: [esmSubpaths(root)],
});
const logger = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };
// One bundle, whether the worker traces or not (workflows/trace.ts: the workflow code must
// not depend on it), with Keel's trace-context interceptors.
// The tolerant payload converter (workflows/payload-converter.ts): in the bundle, and as
// CommonJS for the worker's own side, which loads it with require().
await build({
  entryPoints: ['workflows/payload-converter.ts'],
  absWorkingDir: root,
  outfile: path.join(dist, PAYLOAD_CONVERTER_FILE),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
const bundleOptions = { workflowsPath, payloadConverterPath: SOURCE_PAYLOAD_CONVERTER, workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES], preloadModules: [...PRELOADED_WORKFLOW_MODULES], logger };
const { code } = await bundleWorkflowCode(bundleOptions);
await writeFile(path.join(dist, BUNDLE_FILE), code);
// The same code whose failures are encoded, for workers with encryption keys (a bundle carries its failure converter).
const encoded = await bundleWorkflowCode({ ...bundleOptions, failureConverterPath: path.join(root, 'worker/failure-converter.cjs') });
await writeFile(path.join(dist, ENCODED_FAILURES_BUNDLE_FILE), encoded.code);
// The failure converter the worker loads by path when encryption keys are set (worker/worker.ts
// resolves it beside its own module, which is dist/worker/main.js once compiled).
await copyFile(path.join(root, 'worker/failure-converter.cjs'), path.join(dist, 'worker/failure-converter.cjs'));
// The console: the same options as the server's build on demand.
await build(consoleBuildOptions(path.join(dist, 'console', 'app.js')));
// The console's page and stylesheet, beside the compiled server (server/app.ts reads them from
// its own folder's console/): dist/server/serve.js serves them in the image.
await mkdir(path.join(dist, 'server', 'console'), { recursive: true });
for (const file of ['index.html', 'style.css']) await copyFile(path.join(root, 'server/console', file), path.join(dist, 'server/console', file));
const size = `${BUNDLE_FILE} (${((await stat(path.join(dist, BUNDLE_FILE))).size / 1024).toFixed(0)} KiB)`;
console.log(`keel build: ${path.relative(root, dist)}/worker/main.js, worker/healthcheck.js, server/serve.js, console/app.js, ${size} in ${Date.now() - started} ms`);
