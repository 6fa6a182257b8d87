// One inbox of everything waiting for a human across goals and sessions: tool calls with
// their exact arguments (and a diff for edits and writes), plans waiting for approval, and
// questions. Found by the search attributes, then read from each workflow's queries.
import fs from 'node:fs/promises';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import type { KeelClient } from '../client/keel-client';
import type { Json } from '../machines/index';
import type { InboxItem } from './schemas';

const PER_WORKFLOW_MS = 3_000;

export async function readInbox(keel: KeelClient): Promise<InboxItem[]> {
  const [waiting, busySessions] = await Promise.all([
    keel.list({ waitingForApproval: true, limit: 200 }),
    // A question does not count as a pending approval; the session is `processing` meanwhile.
    keel.list({ kind: 'session', status: 'processing', limit: 200 }),
  ]);
  const seen = new Set<string>();
  const entries = [...waiting, ...busySessions].filter((e) => (seen.has(e.id) ? false : (seen.add(e.id), true)));
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

async function toolItem(
  workflowId: string,
  workflowKind: 'goal' | 'session',
  p: { callId: string; name: string; input: Json; reason: string | null },
  workspace: string | null,
  taskId: string | null,
): Promise<InboxItem> {
  return { type: 'tool_call', workflowId, workflowKind, callId: p.callId, toolName: p.name, input: p.input, reason: p.reason, diff: await diffOf(p.name, p.input, workspace), taskId };
}

/** What an edit or a write would change, as a unified diff (null for other tools). */
export async function diffOf(toolName: string, input: Json, workspace: string | null): Promise<string | null> {
  const patch = await patchOf(toolName, input, workspace);
  // createTwoFilesPatch starts with a line of `=`: not part of a unified diff.
  return patch === null ? null : patch.replace(/^=+\n/, '');
}

async function patchOf(toolName: string, input: Json, workspace: string | null): Promise<string | null> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return null;
  const file = typeof input.path === 'string' ? input.path : null;
  if (!file) return null;
  if (toolName === 'edit_file' && typeof input.old_string === 'string' && typeof input.new_string === 'string') {
    const newString = input.new_string;
    const before = (await readInside(workspace, file)) ?? input.old_string;
    const after = input.replace_all === true ? before.split(input.old_string).join(newString) : before.replace(input.old_string, () => newString);
    return createTwoFilesPatch(`a/${file}`, `b/${file}`, before, after, undefined, undefined, { context: 3 });
  }
  if (toolName === 'write_file' && typeof input.content === 'string') {
    const before = (await readInside(workspace, file)) ?? '';
    return createTwoFilesPatch(before === '' ? '/dev/null' : `a/${file}`, `b/${file}`, before, input.content, undefined, undefined, { context: 3 });
  }
  return null;
}

/** The file's text when it lies inside the workspace (never a path outside it). */
async function readInside(workspace: string | null, file: string): Promise<string | null> {
  if (!workspace) return null;
  const root = path.resolve(workspace);
  const full = path.resolve(root, file);
  if (full !== root && !full.startsWith(root + path.sep)) return null;
  try {
    const real = await fs.realpath(full);
    const realRoot = await fs.realpath(root);
    if (!real.startsWith(realRoot + path.sep)) return null;
    const stat = await fs.stat(real);
    if (!stat.isFile() || stat.size > 1_000_000) return null;
    return await fs.readFile(real, 'utf8');
  } catch {
    return null;
  }
}
