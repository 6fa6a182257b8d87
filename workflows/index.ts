// Every workflow the Keel worker runs is exported from here; the worker bundles this file.
export { sessionWorkflow, type SessionCarry, type SessionOptions, type SessionResult } from './session';
export { goalWorkflow, type GoalOptions, type GoalResult, type GoalTaskReport } from './goal';
export { agentWorkflow, type AgentInput, type AgentResult } from './agent';
