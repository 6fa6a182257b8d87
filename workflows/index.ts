// Every workflow the Keel worker runs is exported from here; the worker bundles this file.
//
// The SDK evaluates a workflow's modules anew for every workflow it caches (each has its
// own module cache), and Keel's modules are mostly zod schemas and machine tables: a
// session that also evaluated the goal's modules would hold them in memory for as long as
// it is cached. So the goal and its agents load their modules when one of them starts
// (`webpackMode: "eager"`: the code is in this bundle; only its evaluation waits, a
// microtask, before the workflow registers its handlers, so nothing sent to it is missed).
import type { AgentInput, AgentResult } from './agent';
import type { GoalCarry, GoalOptions, GoalResult } from './goal';

export { sessionWorkflow, type SessionCarry, type SessionOptions, type SessionResult } from './session';
export type { GoalOptions, GoalResult, GoalTaskReport } from './goal';
export type { AgentInput, AgentResult } from './agent';

export async function goalWorkflow(options: GoalOptions, carry?: GoalCarry): Promise<GoalResult> {
  const goal = await import(/* webpackMode: "eager" */ './goal');
  return goal.goalWorkflow(options, carry);
}

export async function agentWorkflow(input: AgentInput): Promise<AgentResult> {
  const agent = await import(/* webpackMode: "eager" */ './agent');
  return agent.agentWorkflow(input);
}
