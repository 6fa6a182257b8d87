// The live view of a goal, shared by `keel goal`, `keel watch` and `npm run demo`: the plan
// as a table, task status changes, the planner's and critic's streamed text, approvals
// answered inline (y / n / always) or automatically with --yes, then the final report.
import os from 'node:os';
import { commandEnding } from '../../machines/evidence';
import { PolicyRule, ruleCovers, suggestedRuleFor } from '../../machines/policy';
import type { GoalHandle } from '../goal-handle';
import type { GoalLogEntry } from '../../workflows/definitions';
import type { GoalResult } from '../../workflows/goal';
import { UpdateRejectedError } from '../errors';
import { callLines, workspaceOf } from './call-view';
import { type LineReader, type Output, table } from './output';
import { showPaged } from './pager';
import { MODEL_TOPIC } from '../../workflows/protocol/topics';

export interface GoalViewOptions {
  out: Output;
  /** Answer every question yes: the plan and every tool call. */
  yes: boolean;
  /** Where to ask; null when nobody can answer (non-interactive, --json). */
  ask: LineReader | null;
  /** Stream offset to start at. */
  from?: number;
  signal?: AbortSignal;
  /** When the goal blocks on a failed task: wait for someone to resolve it (the default), or cancel the goal with the reason (the demo: nobody can). */
  whenBlocked?: 'wait' | 'cancel';
}

interface PlannedTask {
  id: string;
  title: string;
  role?: string;
  dependencies?: string[];
}

/** Follows the goal until it ends (or `signal` aborts: then null). */
export async function followGoal(goal: GoalHandle, options: GoalViewOptions): Promise<GoalResult | null> {
  const { out, ask } = options;
  // `always` on a plan approves later plans; on a tool call it remembers a rule the person
  // saw (and could edit) for calls it covers — never every call of every tool.
  let plansAlways = options.yes;
  const rules: { rule: string; approver: string }[] = [];
  const person = `keel goal (${os.userInfo().username})`;
  const answered = new Set<string>();
  let workspace: string | null | undefined;
  /** Why each task last failed, for a blocked goal's reason. */
  const failures = new Map<string, string>();
  const tolerate = async (body: () => Promise<unknown>) => {
    try {
      await body();
    } catch (error) {
      // Answered meanwhile (another terminal, a timeout): the goal's log says what happened.
      if (error instanceof UpdateRejectedError) out.line(out.dim(`  (${error.reason})`));
      else throw error;
    }
  };
  const question = async (text: string, raw = false): Promise<string | null> => {
    if (!ask) return null;
    out.spinner(null);
    out.line(text);
    const line = await ask.next('> ', text);
    if (line === null) return null;
    return raw ? line.trim() : line.trim().toLowerCase();
  };
  /** Prints one event (and answers what it asks, when it can). */
  const show = async (e: GoalLogEntry): Promise<void> => {
    if (e.kind === 'plan.goal_received') {
      out.line(`${out.bold('goal')} ${e.goalDescription}`);
      out.spinner('planning…');
    } else if (e.kind === 'plan.retry_scheduled') {
      // The planner's or critic's call failed and waits for another round: say so, or the goal looks stuck.
      out.line(out.yellow(`${e.advisor} failed (${oneLine(e.reason)}); attempt ${e.attempt} of ${e.maxAttempts} in ${waitOf(e.delayMs)}`));
      out.spinner(`waiting for the ${e.advisor}…`);
    } else if (e.kind === 'plan.invalid') {
      out.line(out.yellow(`plan attempt ${e.attempt} was invalid: ${e.errors.join('; ')}`));
    } else if (e.kind === 'plan.created' || e.kind === 'plan.updated') {
      const tasks = e.tasks as unknown as PlannedTask[];
      out.line(out.bold(`plan v${e.planVersion}${e.kind === 'plan.updated' ? ` (${e.changes})` : ''}`));
      for (const row of table([['id', 'role', 'after', 'title'], ...tasks.map((t) => [t.id, t.role ?? '', (t.dependencies ?? []).join(',') || '-', t.title])])) out.line(`  ${row}`);
    } else if (e.kind === 'plan.approval_requested') {
      if (plansAlways) {
        out.line(out.green(`plan v${e.planVersion} approved (${options.yes ? '--yes' : 'always'})`));
        await tolerate(() => goal.approvePlan());
        return;
      }
      const a = await question(`Approve plan v${e.planVersion}? [y/n]`);
      if (a === 'y' || a === 'yes' || a === 'always') {
        if (a === 'always') plansAlways = true;
        await tolerate(() => goal.approvePlan());
      } else if (a === 'n' || a === 'no') {
        const feedback = (await question('What should change?')) || 'please propose a different plan';
        await tolerate(() => goal.rejectPlan(feedback));
      } else out.line(out.yellow(`the plan waits for approval: keel approve ${goal.id}`));
    } else if (e.kind === 'plan.approved') {
      if (!options.yes) out.line(`plan v${e.planVersion} approved (${e.by})`);
      out.spinner('running tasks…');
    } else if (e.kind === 'plan.rejected') {
      out.line(`plan v${e.planVersion} rejected: ${e.feedback}`);
      out.spinner('planning…');
    } else if (e.kind === 'plan.task_started') {
      out.line(`${out.cyan('▶')} [${e.taskId}] started${e.attempt > 1 ? ` (attempt ${e.attempt})` : ''}`);
    } else if (e.kind === 'plan.task_completed') {
      // A refusal is the cause, whatever the agent made of it: said on the line (workflows/goal-agents.ts describes evidence).
      const refusals = [...new Set(e.evidence.flatMap((line) => /→ (\S+ refused: .*)$/.exec(line)?.[1] ?? []))];
      const cause = e.outcome === 'failed' && refusals.length > 0 ? ` (${refusals.join('; ')})` : '';
      out.line(`${e.outcome === 'succeeded' ? out.green('✔') : out.red('✘')} [${e.taskId}] ${e.outcome}${e.result ? `: ${oneLine(e.result)}` : ''}${cause}`);
      if (e.outcome === 'failed') failures.set(e.taskId, `${e.result ? oneLine(e.result) : 'failed'}${cause}`);
    } else if (e.kind === 'plan.blocked') {
      const why = e.taskIds.map((id) => `${id}: ${failures.get(id) ?? 'failed'}`).join('; ');
      if (options.whenBlocked === 'cancel') {
        out.line(out.yellow(`blocked on ${why}; nobody here can resolve a failed task, so the goal is cancelled`));
        await tolerate(() => goal.cancel(`blocked on ${why}`));
      } else out.line(out.yellow(`blocked on ${e.taskIds.join(', ')}: resolve with the SDK (resolveTask) or cancel with keel cancel ${goal.id}`));
    } else if (e.kind === 'agent.approval_requested') {
      if (answered.has(e.callId)) return;
      answered.add(e.callId);
      const what = `[${e.taskId}] ${e.toolName} ${oneLine(JSON.stringify(e.input), 120)}`;
      const request = { tool: e.toolName, input: e.input };
      if (options.yes) {
        out.line(`${out.green('✓')} approved ${what} (--yes)`);
        await tolerate(() => goal.approve(e.callId, { approver: 'keel --yes' }));
        return;
      }
      const covering = rules.find((r) => ruleCovers(r.rule, request));
      if (covering) {
        out.line(`${out.green('✓')} approved ${what} (always: ${covering.rule})`);
        await tolerate(() => goal.approve(e.callId, { scope: 'session', rule: covering.rule, approver: `${covering.approver}, always` }));
        return;
      }
      // The whole call (the event carries a preview), with the diff of an edit, before `y`.
      if (ask) {
        out.spinner(null);
        const full = (await goal.pendingApprovals()).find((p) => p.callId === e.callId);
        workspace ??= await workspaceOf(goal.workflowHandle);
        await showPaged(await callLines(full ?? { callId: e.callId, name: e.toolName, input: e.input, reason: e.reason, taskId: e.taskId }, workspace), out, ask.interface);
      }
      const a = await question(`${out.yellow('?')} [${e.taskId}] ${e.toolName} ${e.callId}${e.reason ? ` (${e.reason})` : ''}\n  allow? [y/n/always]`);
      if (a === 'y' || a === 'yes') {
        await tolerate(() => goal.approve(e.callId, { approver: person }));
      } else if (a === 'always') {
        const suggested = suggestedRuleFor(request);
        let rule: string | undefined;
        if (suggested !== undefined) {
          const edited = await question(`  remember for this goal: ${out.bold(suggested)}\n  Enter keeps it; type another rule or "exact" for this exact call only`, true);
          rule = edited === null || edited === '' ? suggested : edited === 'exact' ? undefined : edited;
        }
        if (rule !== undefined && PolicyRule.safeParse(rule).success && ruleCovers(rule, request)) {
          rules.push({ rule, approver: person });
          await tolerate(() => goal.approve(e.callId, { scope: 'session', rule, approver: person }));
        } else {
          if (rule !== undefined) out.line(out.yellow(`  ${JSON.stringify(rule)} is not a rule that covers this call; remembering this exact call only`));
          await tolerate(() => goal.approve(e.callId, { scope: 'session', approver: person }));
        }
      } else if (a === 'n' || a === 'no') await tolerate(() => goal.deny(e.callId, 'denied at the terminal'));
      else out.line(out.yellow(`waiting for approval: keel approve ${goal.id} ${e.callId}`));
    } else if (e.kind === 'agent.approval_answered') {
      if (!options.yes) out.line(out.dim(`  ${e.callId} ${e.decision}`));
    } else if (e.kind === 'plan.critique') {
      out.line(`${out.bold('critic')} (${e.verdict}): ${e.findings}`);
      out.spinner(e.verdict === 'pass' ? 'finishing…' : 'running follow-up…');
    } else if (e.kind === 'budget.exhausted') {
      out.line(out.red(`budget exhausted: ${e.limit} (${e.used} of ${e.allowed})`));
    } else if (e.kind === 'plan.stopped') {
      out.line(out.red(`stopped: ${e.reason}`));
    } else if (e.kind === 'plan.goal_met') {
      out.line(out.green('goal met'));
    }
  };
  out.spinner('starting…');
  let modelCall: string | null = null;
  for await (const item of goal.events({ ...(options.from !== undefined ? { from: options.from } : {}), ...(options.signal ? { signal: options.signal } : {}) })) {
    if (item.topic === MODEL_TOPIC) {
      const d = item.data;
      if (d.kind === 'start' && d.callId !== modelCall) {
        modelCall = d.callId;
        out.line(out.dim('model:'));
      }
      if (d.kind === 'delta' && d.block === 'text') out.text(out.dim(d.text));
      continue;
    }
    const e = item.data;
    await show(e);
    if (e.kind === 'plan.goal_met' || e.kind === 'plan.stopped') break;
  }
  out.spinner(null);
  if (options.signal?.aborted) return null;
  return goal.result();
}

/** The final report as lines. */
export function reportLines(result: GoalResult, out: Output): string[] {
  const lines = [
    '',
    out.bold(`report: ${result.verdict === 'goal_met' ? out.green('goal met') : out.red(result.verdict)}`),
    `  ${result.summary}`,
    '',
    ...table([['task', 'status', 'tries', 'files / commands'], ...result.tasks.map((t) => [t.id, t.status, String(t.attempts), evidence(t.details)])]).map((l) => `  ${l}`),
    '',
    `  usage: ${result.usage.inputTokens} input + ${result.usage.outputTokens} output tokens, $${result.cost.toFixed(4)}, plan v${result.planVersion}, ${result.reviews.length} review(s)`,
  ];
  return lines;
}

function evidence(details: GoalResult['tasks'][number]['details']): string {
  if (!details) return '-';
  const parts = [...details.filesChanged, ...details.commands.map((c) => `\`${c.command}\` → ${c.refused ?? (c.limit !== undefined ? commandEnding(c) : (c.exitCode ?? c.status))}`)];
  return parts.join(', ') || '-';
}

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A retry's wait as a person reads it: 800 ms, 5 s, 2 min 30 s. */
export function waitOf(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  const seconds = Math.round(ms / 1_000);
  if (seconds < 60) return `${seconds} s`;
  const rest = seconds % 60;
  return `${Math.floor(seconds / 60)} min${rest > 0 ? ` ${rest} s` : ''}`;
}
