// One inbox of everything waiting for a human across goals and sessions: tool calls with
// their exact arguments (and a diff for edits and writes), plans waiting for approval, and
// questions. Found by the search attributes, then read from each workflow's queries.
import { diffOf } from '../client/call-diff';
import type { KeelClient } from '../client/keel-client';
import { suggestedSessionRule } from '../machines/policy';
import type { Json } from '../machines/index';
import type { InboxItem } from './schemas';

const PER_WORKFLOW_MS = 3_000;

export async function readInbox(keel: KeelClient): Promise<InboxItem[]> {
  const [waiting, asking, paused] = await Promise.all([
    keel.list({ waitingForApproval: true, limit: 200 }),
    // A question does not count as a pending approval: the session is `awaiting_input`
    // meanwhile, or `paused` if it was paused with the question open.
    keel.list({ kind: 'session', status: 'awaiting_input', limit: 200 }),
    keel.list({ kind: 'session', status: 'paused', limit: 200 }),
  ]);
  const seen = new Set<string>();
  const entries = [...waiting, ...asking, ...paused].filter((e) => (seen.has(e.id) ? false : (seen.add(e.id), true)));
  // One workflow whose worker is down must not hold up the whole inbox.
  const per = await Promise.all(
    entries.map((e) => keel.client.connection.withDeadline(Date.now() + PER_WORKFLOW_MS, () => itemsOf(keel, e.id, e.kind, e.workspace)).catch(() => [] as InboxItem[])),
  );
  return per.flat();
}

async function itemsOf(keel: KeelClient, id: string, kind: string | null, workspace: string | null): Promise<InboxItem[]> {
  if (kind === 'goal') {
    const goal = keel.getGoal(id);
    const state = await goal.state();
    const out: InboxItem[] = [];
    if (state.status === 'awaiting_plan_approval') {
      out.push({ type: 'plan', workflowId: id, goal: state.goal.goal, planVersion: state.goal.planVersion, tasks: state.goal.tasks });
    }
    for (const p of state.pendingApprovals) out.push(await toolItem(id, 'goal', p, workspace, p.taskId));
    return out;
  }
  if (kind === 'session') {
    const state = await keel.getSession(id).state();
    const out: InboxItem[] = [];
    for (const p of state.pendingApprovals) out.push(await toolItem(id, 'session', p, workspace, null));
    if (state.question) out.push({ type: 'question', workflowId: id, callId: state.question.callId, question: state.question.question });
    return out;
  }
  // An agent's calls are answered on its goal, which lists them too.
  return [];
}

/** A waiting tool call as the inbox lists it, with the rule "approve for session" offers. */
export async function toolItem(
  workflowId: string,
  workflowKind: 'goal' | 'session',
  p: { callId: string; name: string; input: Json; reason: string | null },
  workspace: string | null,
  taskId: string | null,
): Promise<InboxItem> {
  const suggestedRule = suggestedSessionRule(p) ?? null;
  return { type: 'tool_call', workflowId, workflowKind, callId: p.callId, toolName: p.name, input: p.input, reason: p.reason, diff: await diffOf(p.name, p.input, workspace), taskId, suggestedRule };
}
