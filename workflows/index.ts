// Every workflow the Keel worker runs is exported from here; the worker bundles this file.
//
// The goal and its agents import their modules when one of them starts (`webpackMode:
// "eager"`: the code is in this bundle; the import resolves a microtask later, before the
// workflow registers its handlers, so nothing sent to it is missed). That was so a cached
// session would not hold a copy of the goal's modules; every bundle Keel builds now shares
// them between workflows (worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES), and the
// import stays: taking that microtask out would change when recorded runs register their
// handlers.
//
// The goal's and an agent's own spans open and close here (workflows/trace.ts): around the
// workflow, so a failure ends the span too, and continue-as-new does not.
import { ContinueAsNew, isCancellation } from '@temporalio/workflow';
import type { AgentInput, AgentResult } from './agent';
import type { GoalCarry, GoalOptions, GoalResult } from './goal';
import { beginAgent, beginGoal, endRoot, usageAttributes } from './trace';
import { sessionWorkflow } from './session';
import { pinned } from './versioning';

export { sessionWorkflow };
export type { SessionCarry, SessionOptions, SessionResult } from './session';
export type { GoalOptions, GoalResult, GoalTaskReport } from './goal';
export type { AgentInput, AgentResult } from './agent';

/** The store probe's nudge (worker/store-probe.ts): a worker that takes its task is alive; it does nothing else. */
export function keelStoreProbe(): Promise<void> {
  return Promise.resolve();
}

export async function goalWorkflow(options: GoalOptions, carry?: GoalCarry): Promise<GoalResult> {
  const goal = await import(/* webpackMode: "eager" */ './goal');
  beginGoal(typeof options?.goal === 'string' ? options.goal : '');
  try {
    const result = await goal.goalWorkflow(options, carry);
    endRoot({ 'keel.goal.verdict': result.verdict, 'keel.goal.runs': result.runs, 'keel.goal.tasks': result.tasks.length, ...usageAttributes(result.usage) });
    return result;
  } catch (error) {
    if (!(error instanceof ContinueAsNew)) endRoot({}, endedBy(error));
    throw error;
  }
}

export async function agentWorkflow(input: AgentInput): Promise<AgentResult> {
  const agent = await import(/* webpackMode: "eager" */ './agent');
  const i = (input ?? {}) as Partial<AgentInput>;
  beginAgent({ role: String(i.role ?? 'agent'), taskId: String(i.taskId ?? ''), attempt: Number(i.attempt ?? 0), goalId: String(i.goalId ?? '') });
  try {
    const result = await agent.agentWorkflow(input);
    endRoot({ 'keel.task.outcome': result.outcome, 'keel.turn.outcome': result.turnOutcome, 'keel.steps': result.steps, ...usageAttributes(result.usage) });
    return result;
  } catch (error) {
    endRoot({}, endedBy(error));
    throw error;
  }
}

function endedBy(error: unknown): string {
  return isCancellation(error) ? 'cancelled' : error instanceof Error ? error.name : 'error';
}

// On a versioned worker (KEEL_DEPLOYMENT_NAME), every run stays on the build it started on;
// sessions and goals move to a newer one by continuing as new (workflows/versioning.ts).
pinned(sessionWorkflow);
pinned(goalWorkflow);
pinned(agentWorkflow);
