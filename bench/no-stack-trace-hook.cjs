// What the Temporal SDK's workflow stack-trace hook costs a variant: preloaded into the bench's
// workers, it turns the hook off in every thread of the process before the SDK installs it.
//   BENCH_WORKER_NODE_ARGS="--require ./bench/no-stack-trace-hook.cjs" npm run bench -- \
//     --scenario single --variants floor-local,keel --rounds 3 --name no-hook
// For the `__stack_trace` query (the Web UI's "Stack Trace" tab) the SDK captures a stack for
// every promise workflow code makes and maps its frames through the bundle's source map
// (@temporalio/worker lib/workflow/vm-shared.js, sdk-typescript#1587). With it off that query
// fails ("Workflow stack traces are not enabled on this worker"); nothing else changes. A
// measuring tool, not a setting: the tests turn it off in their forks
// (test/setup/workflow-stack-traces.ts), production workers keep it. The peers (bench/peers/)
// load their own copy of the SDK and keep theirs.
const { threadId } = require('node:worker_threads');

try {
  const { globalHandlers } = require('@temporalio/worker/lib/workflow/vm-shared');
  if (typeof globalHandlers?.setPromiseHook !== 'function') throw new Error('globalHandlers.setPromiseHook is gone from this SDK version');
  globalHandlers.setPromiseHook = () => {};
} catch (error) {
  console.error(`bench/no-stack-trace-hook.cjs (thread ${threadId}): the hook stays on: ${error instanceof Error ? error.message : String(error)}`);
}
