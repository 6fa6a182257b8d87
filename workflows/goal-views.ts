// What people see of a goal: the markdown details of the Temporal UI, its usage, why it
// stopped, and the queries that answer them (read only).
import { setHandler } from '@temporalio/workflow';
import { addUsage } from '../machines/budget';
import { findExhaustion, ZERO_USAGE, type GoalState, type LogEvent } from '../machines/index';
import type { PolicyConfig, PolicyOrigin } from '../machines/policy';
import { goalEventsQuery, goalPendingApprovalsQuery, goalStateQuery, goalUsageQuery, planQuery, transcriptQuerySchema, type GoalLogEntry, type GoalRunnerEvent, type GoalStateView, type GoalUsageView } from './definitions';
import { parsePayload as parse } from './payloads';
import { previewValue } from './preview';
import { code, escapeMarkdown } from './markdown';
import type { AgentPool } from './goal-agents';
import type { MachineHost } from './host';

export interface GoalViewHost {
  goal: { readonly state: GoalState };
  agents: AgentPool;
  /** What the goal waits for while its store or workspace host is away, in words. */
  waiting?: () => string | null;
}

export function goalDetails({ goal, agents, waiting: infra }: GoalViewHost): string {
  const g = goal.state;
  const waiting = agents.pending();
  const u = g.usage;
  const running = g.tasks.filter((t) => t.status === 'running').map((t) => t.id);
  return [
    `**${escapeMarkdown(g.status)}**${reasonOf(g) ? ` (${escapeMarkdown(reasonOf(g) ?? '')})` : ''} · plan v${g.planVersion} · ${g.tasks.filter((t) => t.status === 'succeeded').length}/${g.tasks.length} tasks done`,
    running.length > 0 ? `running: ${running.map(code).join(', ')}` : '',
    `usage: ${u.inputTokens} in / ${u.outputTokens} out tokens, $${u.costUsd.toFixed(4)}`,
    waiting.length > 0 ? `waiting for approval: ${waiting.map((p) => `${code(p.name)} (${code(p.callId)}, task ${code(p.taskId)})`).join(', ')}` : '',
    escapeMarkdown(infra?.() ?? ''),
  ]
    .filter((l) => l !== '')
    .join('\n\n');
}

export interface GoalQueryHost extends GoalViewHost {
  goalId: string;
  host: MachineHost<GoalLogEntry, LogEvent | GoalRunnerEvent>;
  setup: () => { policy: PolicyConfig | null; policyOrigin: PolicyOrigin | null };
}

export function goalQueries({ goalId, goal, agents, host, setup, waiting }: GoalQueryHost): void {
  const usageView = (): GoalUsageView => ({
    // With what its cancelled agents were billed for after it stopped (AgentPool.late).
    usage: agents.late === ZERO_USAGE ? goal.state.usage : addUsage(goal.state.usage, agents.late),
    limits: goal.state.config.limits,
    agents: { ...agents.usage },
    exhaustion: goal.state.status === 'stopped' ? goal.state.exhaustion : findExhaustion(goal.state.config.limits, { usage: goal.state.usage }),
  });
  setHandler(goalPendingApprovalsQuery, () => agents.pending());
  setHandler(goalUsageQuery, () => usageView());
  setHandler(planQuery, () => ({ planVersion: goal.state.planVersion, status: goal.state.status, tasks: goal.state.tasks, evidence: { ...agents.evidence } }));
  setHandler(goalStateQuery, (): GoalStateView => {
    const { policy, policyOrigin } = setup();
    return {
      goalId,
      status: goal.state.status,
      reason: reasonOf(goal.state),
      goal: previewValue(goal.state),
      running: agents.running(),
      pendingApprovals: agents.pending(),
      usage: usageView(),
      nextEventSeq: host.seq,
      policy: policy && policyOrigin ? { effective: policy, origin: policyOrigin } : null,
      waiting: waiting?.() ?? null,
    };
  });
  setHandler(goalEventsQuery, (raw) => host.events(parse(transcriptQuerySchema, raw, 'events') ?? {}));
}

function reasonOf(goal: GoalState): string | null {
  if (goal.status === 'stopped') return goal.reason;
  if (goal.status === 'goal_met') return goal.summary;
  if (goal.status === 'blocked') return `tasks failed: ${goal.taskIds.join(', ')}`;
  return null;
}
