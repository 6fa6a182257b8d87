// The autonomy loop (seed 002): goal → plan → (approval) → execute a task DAG with child
// agents → critic review → goal met, or stopped with an honest report. The machine picks
// which tasks start; the goal workflow starts them as child agent workflows and reports
// back. Every way out (cancel, budget, deadline, timeouts) ends in `stopped` with the
// reason, so a goal never just hangs.
// One concept a file: state.ts (what a goal holds, the plan query), protocol.ts (events,
// directives, the report), create.ts (the first state), machine.ts (the transition table),
// reduce.ts (one case per event), steps.ts (plan, dispatch, await approval, stop).
export { goalConfigSchema, goalStateSchema, planOf, type GoalConfig, type GoalState, type GoalStatus, type Review } from './state';
export { goalEventSchema, type GoalDirective, type GoalEvent, type GoalReport } from './protocol';
export { createGoal, GOAL_DEFAULTS, type NewGoal } from './create';
export { goalMachine } from './machine';
export type { Task, TaskInput } from '../task-graph';
