// `npm run bench:heap:modules [N]`: what evaluating Keel's workflow modules costs each new or
// replayed workflow, and which modules cost it. One process, run with --expose-gc, no server.
//
// Why per workflow: with the SDK's default reusable V8 context (reuseV8Context), the bundle
// runs once per worker thread, but every workflow gets its own webpack module cache
// (Activator.moduleCache; @temporalio/worker/lib/workflow/reusable-vm.js routes
// `__webpack_module_cache__` to it), so each workflow evaluates every module it imports
// anew, except the ones already in the shared cache: the SDK's own (loaded with the bundle)
// and the bundle's `preloadModules` (worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES),
// evaluated once before any workflow exists and frozen.
//
// This probe does what the SDK does, without Temporal: the same bundle as the worker (same
// options), run in a vm context with the same module-cache proxy, then N times what
// initRuntime does to import the workflows (importInterceptors + importWorkflows) with a
// fresh module cache each, all kept alive as cached workflows keep theirs. It reports the
// time and retained heap per workflow, and the modules that took the most time (self time,
// children excluded). Writes bench/results/heap-modules.{json,md}.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { payloadConverterPath, workflowsPath } from '../../worker/worker';
import { PRELOADED_WORKFLOW_MODULES, WORKFLOW_INTERCEPTOR_MODULES } from '../../worker/workflow-bundle';
import { runBundle } from './bundle-vm';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench/heap/modules.ts needs node --expose-gc (npm run bench:heap:modules)');
const workflows = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 100);
/** `--no-preload`: the bundle without preloaded modules (what every workflow paid before). */
const preload = !process.argv.includes('--no-preload');
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

function heapMiB(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

async function main(): Promise<void> {
  const quiet = () => {};
  const bundle = await bundleWorkflowCode({
    workflowsPath,
    payloadConverterPath,
    workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES],
    ...(preload ? { preloadModules: [...PRELOADED_WORKFLOW_MODULES] } : {}),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
  });
  // Each module's own evaluation time: webpack's require, wrapped.
  const call = '__webpack_modules__[moduleId].call(module.exports, module, module.exports, __webpack_require__);';
  if (!bundle.code.includes(call)) throw new Error('the bundle no longer calls its modules the way this probe expects');
  const code = bundle.code.replace(call, `globalThis.__keelModuleTime(moduleId, () => ${call.slice(0, -1)});`);

  const self = new Map<string, number>();
  const stack: number[] = [];
  const moduleTime = (id: string, run: () => void) => {
    const start = performance.now();
    stack.push(0);
    try {
      run();
    } finally {
      const children = stack.pop()!;
      const total = performance.now() - start;
      self.set(id, (self.get(id) ?? 0) + total - children);
      if (stack.length > 0) stack[stack.length - 1]! += total;
    }
  };
  const bootStart = performance.now();
  const { shared, importAsWorkflow: importOnce } = runBundle(code, { __keelModuleTime: moduleTime });
  const bootMs = performance.now() - bootStart;
  const sharedModules = shared.size;
  if (process.argv.includes('--list')) console.log([...shared.keys()].join('\n'));
  const atBoot = new Map(self);
  self.clear();

  importOnce(); // warm: compiled code, inline caches
  self.clear();
  const kept: Map<string, unknown>[] = [];
  const before = heapMiB();
  const start = performance.now();
  for (let i = 0; i < workflows; i++) kept.push(importOnce());
  const ms = performance.now() - start;
  const after = heapMiB();
  const perWorkflow = {
    evaluationMs: Math.round((ms / workflows) * 100) / 100,
    heapKiB: Math.round(((after - before) * 1024) / workflows),
    modules: kept[0]!.size,
  };
  if (process.argv.includes('--list')) console.log([...kept[0]!.keys()].join('\n'));
  const top = [...self.entries()]
    .map(([id, total]) => ({ id, ms: Math.round((total / workflows) * 1000) / 1000 }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 25);
  const result = {
    when: new Date().toISOString(),
    workflows,
    preload,
    node: process.version,
    boot: { sharedModules, preloadMs: Math.round(bootMs), topMs: [...atBoot.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([id, t]) => ({ id, ms: Math.round(t * 100) / 100 })) },
    perWorkflow,
    topModulesPerWorkflow: top,
  };
  const name = preload ? 'heap-modules' : 'heap-modules-no-preload';
  await fs.mkdir(path.join(root, 'bench/results'), { recursive: true });
  await fs.writeFile(path.join(root, `bench/results/${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  const md = [
    `# Module evaluation per workflow (\`npm run bench:heap:modules -- ${workflows}${preload ? '' : ' --no-preload'}\`, ${result.when})`,
    '',
    `Shared (evaluated once per worker thread): ${sharedModules} modules, ${result.boot.preloadMs} ms of preloading. Per workflow: ${perWorkflow.modules} modules evaluated, ${perWorkflow.evaluationMs} ms, ${perWorkflow.heapKiB} KiB of heap kept while it is cached.`,
    '',
    '| module (self time per workflow) | ms |',
    '|---|---|',
    ...top.map((t) => `| ${t.id} | ${t.ms} |`),
    '',
  ].join('\n');
  await fs.writeFile(path.join(root, `bench/results/${name}.md`), md);
  console.log(md);
}

await main();
