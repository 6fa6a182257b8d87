// What a worker allocates, garbage included: V8's sampling heap profiler with the objects
// later collected kept in the profile (a plain --heap-prof keeps only what is still alive,
// which says nothing of GC pressure). Preload it into the bench's workers:
//   BENCH_WORKER_NODE_ARGS="--require ./bench/alloc-profile.cjs" npm run bench -- \
//     --scenario single --variants floor,keel --rounds 8 --turns 3 --name alloc --out /tmp/alloc
// Every thread (the main thread runs the activities, a worker thread the workflows) samples
// from ALLOC_PROFILE_AFTER_MS (default 20 s: past start-up and the warm-up round) for
// ALLOC_PROFILE_FOR_MS (default 30 s) and writes /tmp/alloc-<pid>-<thread>.heapprofile; read
// them with `npx tsx bench/alloc-summary.ts FILE`.
const inspector = require('node:inspector');
const fs = require('node:fs');
const { threadId } = require('node:worker_threads');

const after = Number(process.env.ALLOC_PROFILE_AFTER_MS ?? 20_000);
const during = Number(process.env.ALLOC_PROFILE_FOR_MS ?? 30_000);
const session = new inspector.Session();
session.connect();
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));

setTimeout(async () => {
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  setTimeout(async () => {
    const { profile } = await post('HeapProfiler.stopSampling');
    fs.writeFileSync(`/tmp/alloc-${process.pid}-${threadId}.heapprofile`, JSON.stringify(profile));
  }, during).unref();
}, after).unref();
