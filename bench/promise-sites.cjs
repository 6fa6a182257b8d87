// Where a worker's workflows create their promises. The SDK captures a stack (source-mapped)
// for every promise a workflow creates, for its stack-trace query: promises are a cost of
// their own on the workflow thread. Preload it into the bench's workers:
//   BENCH_WORKER_NODE_ARGS="--require ./bench/promise-sites.cjs" npm run bench -- \
//     --scenario concurrent --variants floor,keel --rounds 1 --turns 3 --sessions 5 --name sites --out /tmp/sites
// Each worker thread that runs workflows writes /tmp/promise-sites-<pid>-<thread>.txt every
// half second: the promises created in workflow context, by the nearest frame and the
// nearest two frames of Keel's workflow code. Divide by the steps the run reports.
const v8 = require('node:v8');
const fs = require('node:fs');
const { threadId } = require('node:worker_threads');

const createHook = v8.promiseHooks.createHook.bind(v8.promiseHooks);
const sites = new Map();
let total = 0;

/** The workflow context's global of a promise made in one, else undefined. */
function workflowGlobal(promise) {
  try {
    const global = promise.constructor.constructor('return globalThis')();
    return global.__TEMPORAL_ACTIVATOR__ ? global : undefined;
  } catch {
    return undefined;
  }
}

const short = (frame) => frame.replace(/^at /, '').replace(/\(.*node_modules\//, '(').replace(/\(.*\/(workflows|machines)\//, '($1/');

// Wraps the SDK's hook (installed once per workflow thread) rather than adding another:
// the site is read from the same stack the SDK formats.
v8.promiseHooks.createHook = (hooks) => {
  const init = hooks.init;
  hooks.init = function (promise, parent) {
    const global = workflowGlobal(promise);
    if (global) {
      total++;
      const frames = (new global.Error().stack ?? '').split('\n').slice(1).map((l) => l.trim()).filter((l) => !/promise_hooks|promise-sites/.test(l));
      const keel = frames.filter((l) => /(workflows|machines)\//.test(l)).slice(0, 2).map(short).join(' < ');
      const site = `${short(frames[0] ?? '')}  ||  ${keel}`;
      sites.set(site, (sites.get(site) ?? 0) + 1);
    }
    return init.call(this, promise, parent);
  };
  const write = () => {
    if (total === 0) return; // a thread that runs no workflows (the SDK's hook is on every thread)
    const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, 60);
    fs.writeFileSync(`/tmp/promise-sites-${process.pid}-${threadId}.txt`, `promises in workflow context: ${total}\n${top.map(([site, n]) => `${String(n).padStart(7)} ${site}`).join('\n')}\n`);
  };
  setInterval(write, 500).unref();
  return createHook(hooks);
};
