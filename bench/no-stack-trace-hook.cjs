// Turns off the Temporal SDK's workflow stack-trace hook in this process (each thread that
// loads it), before any worker installs it. For the `__stack_trace` query (the Web UI's "Stack
// Trace" tab) the SDK captures a stack for every promise workflow code makes and maps its frames
// through the bundle's source map (@temporalio/worker lib/workflow/vm-shared.js,
// sdk-typescript#1587). With it off that query fails ("Workflow stack traces are not enabled on
// this worker"); nothing else reads what it records.
//
// Two users, one switch:
// - the bench, to measure what the hook costs each variant (the peers, bench/peers/, load their
//   own copy of the SDK and keep theirs):
//     BENCH_WORKER_NODE_ARGS="--require ./bench/no-stack-trace-hook.cjs" npm run bench -- \
//       --scenario single --variants floor-local,keel --rounds 5 --name no-hook
// - the test forks (test/setup/workflow-stack-traces.ts says why).
// Production workers keep it. The switch is the SDK's own object, not public API: if an upgrade
// moves it, requiring this fails with the reason rather than leaving the hook on unnoticed.
const { globalHandlers } = require('@temporalio/worker/lib/workflow/vm-shared');

if (typeof globalHandlers?.setPromiseHook !== 'function') {
  throw new Error(
    'bench/no-stack-trace-hook.cjs: @temporalio/worker no longer has globalHandlers.setPromiseHook (lib/workflow/vm-shared.js); find its new switch or stop preloading this file',
  );
}
// `install()` calls it once per process or thread; `promiseHookInstalled` stays false, so new
// workflows are told their stack traces are off.
globalHandlers.setPromiseHook = () => {};
