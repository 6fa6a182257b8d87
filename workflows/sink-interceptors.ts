// Sends the activation's batched sink calls (workflows/sink-batches.ts) as it concludes: after
// every job and microtask of the activation, before the worker collects its sink calls. It
// adds no command and no yield point. In every bundle Keel builds, beside
// workflows/trace-interceptors.ts (worker/workflow-bundle.ts WORKFLOW_INTERCEPTOR_MODULES).
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { flushBatches } from './sink-batches';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  internals: [
    {
      concludeActivation(input, next) {
        flushBatches();
        return next(input);
      },
    },
  ],
});
