// Defaults that more than one side reads, defined once: the workflows (their options), the
// worker (the queue it polls) and the SDK (the queue it starts on). Pure constants, so
// workflow code can bundle this file. A workflow's options are resolved against them in one
// place per kind (resolveSessionOptions, resolveGoalOptions, resolveAgentInput).

/** The model of a session, and of a goal's planner, critic and agents, when the options name none. */
export const DEFAULT_MODEL = 'claude-sonnet-4-6';

/** A call's output limit when the options name none (a session's turns; a goal's planner, critic and agents). */
export const DEFAULT_MAX_TOKENS = 4096;

/** Tool calls of one step run side by side (read-only ones) up to this many, when the options name no other number. */
export const DEFAULT_MAX_PARALLEL_TOOLS = 4;

/** A goal's task agent takes at most this many model steps when the goal's options name no other number. */
export const DEFAULT_MAX_STEPS_PER_TASK = 25;

/** The conversation store of a session or goal when the options name none: `<workspace>/.keel/store`. */
export const defaultStoreDir = (workspace: string): string => `${workspace.replace(/\/+$/, '')}/.keel/store`;

/** The task queue of the worker and the SDK when neither KEEL_TASK_QUEUE nor an option names one. */
export const DEFAULT_TASK_QUEUE = 'keel';
