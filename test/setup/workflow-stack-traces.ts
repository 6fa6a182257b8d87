// Runs before every integration and e2e file (vitest `setupFiles`): turns off the Temporal SDK's
// workflow stack-trace recording in the test fork.
//
// For the `__stack_trace` query (the Web UI's "Stack Trace" tab) the SDK installs a V8 promise
// hook the first time a worker is created: every promise workflow code makes captures a stack
// and maps each frame through the bundle's source map (sdk-typescript#1587). In the SDK's
// debugMode — the tests' in-process workers run workflows on the fork's own thread
// (`workflowsOnCallingThread`) — the hook is the whole fork's, and every other promise (test
// code, clients, gRPC) compiles a `Function` to find out it is not in a workflow. No test asks
// for a stack trace, and the hook decides nothing a workflow does (its only reader is that
// query), so the forks go without it. Measured alone on 2 cores: session-long.test.ts 27.6 →
// 15.9 s (its CPU −37 %), goal.test.ts −32 %, goal-control.test.ts −22 %.
//
// The switch is the SDK's own object (`globalHandlers`, lib/workflow/vm-shared), not public API:
// if an upgrade moves it, this fails every integration file with the reason instead of quietly
// leaving the hook on. Workers in processes of their own (compiled workers, `keel worker`) keep it.
import * as vmShared from '@temporalio/worker/lib/workflow/vm-shared';

interface PromiseHookSwitch {
  setPromiseHook: () => void;
  stopPromiseHook: () => void;
  promiseHookInstalled: boolean;
}

const handlers = vmShared.globalHandlers as unknown as Partial<PromiseHookSwitch> | undefined;
if (typeof handlers?.setPromiseHook !== 'function' || typeof handlers.stopPromiseHook !== 'function') {
  throw new Error('test/setup/workflow-stack-traces.ts: @temporalio/worker no longer has globalHandlers.setPromiseHook (lib/workflow/vm-shared); find its new switch or drop this setup file');
}
// Files share their fork (isolate: false): a worker of an earlier file may have installed it.
handlers.stopPromiseHook();
handlers.setPromiseHook = () => {};
// What new workflows are told (`stackTracesEnabled`): the query then says stack traces are off.
handlers.promiseHookInstalled = false;
