// What a timeout costs a call into a `vm` context: the Temporal SDK passes the worker's
// `isolateExecutionTimeout` (its deadlock detector; Keel's WORKFLOW_DEADLOCK_TIMEOUT) to
// every call into a workflow's sandbox, and Node starts and joins a watchdog thread for each
// call that has one. `npx tsx bench/vm-timeout.ts [calls]`: CPU per call with and without,
// alternated, on a context made as the SDK makes its own (microtaskMode 'afterEvaluate').
import vm from 'node:vm';

const calls = Number(process.argv[2] ?? 20_000);
const context = vm.createContext({}, { microtaskMode: 'afterEvaluate' });
vm.runInContext('globalThis.work = () => { let s = 0; for (let i = 0; i < 100; i++) s += i; return s; }', context);
const call = new vm.Script('work()');

for (const timeout of [undefined, 5_000, undefined, 5_000]) {
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) call.runInContext(context, timeout === undefined ? {} : { timeout });
  const used = process.cpuUsage(before);
  console.log(`${timeout === undefined ? 'no timeout' : `timeout ${timeout} ms`}: ${((used.user + used.system) / calls).toFixed(1)} µs of CPU a call`);
}
