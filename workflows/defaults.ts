// Defaults that more than one side reads, defined once: the workflows (their options), the
// worker (the queue it polls) and the SDK (the queue it starts on). Pure constants, so
// workflow code can bundle this file.

/** The model of a session, and of a goal's planner, critic and agents, when the options name none. */
export const DEFAULT_MODEL = 'claude-sonnet-4-6';

/** The task queue of the worker and the SDK when neither KEEL_TASK_QUEUE nor an option names one. */
export const DEFAULT_TASK_QUEUE = 'keel';
