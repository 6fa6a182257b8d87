// How many sink calls a worker's workflows make, and how many items they carry. Preload it
// into the bench's workers:
//   BENCH_WORKER_NODE_ARGS="--require ./bench/sink-calls.cjs" npx tsx bench/suite.ts \
//     --scenario single --variants floor,keel --rounds 1 --warmup 0 --turns 3 --name sinks --out /tmp/sinks
// Each worker's main thread writes /tmp/sink-calls-<pid>.json every half second: the
// activations whose sink calls it processed and, by sink function, the calls and the items
// (an array argument counts its length). Every sink call costs the worker a copy of the
// workflow's info, cloned between threads, whatever it carries (workflows/sink-batches.ts).
const fs = require('node:fs');
const { isMainThread } = require('node:worker_threads');

if (isMainThread) {
  const { Worker } = require('@temporalio/worker/lib/worker.js');
  const counts = {};
  let activations = 0;
  const process_ = Worker.prototype.processSinkCalls;
  Worker.prototype.processSinkCalls = function (calls, logAttributes) {
    activations++;
    for (const call of calls) {
      const key = `${call.ifaceName}.${call.fnName}`;
      const entry = (counts[key] ??= { calls: 0, items: 0 });
      entry.calls++;
      entry.items += Array.isArray(call.args[0]) ? call.args[0].length : 1;
    }
    return process_.call(this, calls, logAttributes);
  };
  setInterval(() => fs.writeFileSync(`/tmp/sink-calls-${process.pid}.json`, JSON.stringify({ activations, counts })), 500).unref();
}
