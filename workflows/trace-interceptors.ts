// Keel's workflow interceptors: they only move trace context in headers (workflows/trace.ts).
// Every one calls `next` synchronously and returns its promise as is — no await, no
// yield point, no randomness — so a workflow emits exactly the commands it emits without
// them, and headers are not compared on replay. They are in every bundle Keel builds,
// tracing on or off (worker/workflow-bundle.ts WORKFLOW_INTERCEPTOR_MODULES).
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { forNextRun, handling, startedWith, withCaller, withCurrentSpan } from './trace';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute(input, next) {
        startedWith(input.headers);
        return next(input);
      },
      handleSignal(input, next) {
        return handling(input.headers, () => next(input));
      },
      handleUpdate(input, next) {
        return handling(input.headers, () => next(input));
      },
    },
  ],
  outbound: [
    {
      scheduleActivity: (input, next) => next({ ...input, headers: withCurrentSpan(input.headers) }),
      scheduleLocalActivity: (input, next) => next({ ...input, headers: withCurrentSpan(input.headers) }),
      startChildWorkflowExecution: (input, next) => next({ ...input, headers: withCurrentSpan(input.headers) }),
      signalWorkflow: (input, next) => next({ ...input, headers: withCaller(input.headers) }),
      continueAsNew: (input, next) => next({ ...input, headers: forNextRun(input.headers) }),
    },
  ],
});
