// The CLI's commands (client/cli.ts wires them into commander).
import os from 'node:os';
import { policyLines } from './policy-view';
import type { GoalResult } from '../../workflows/goal';
import type { GoalHandle } from '../goal-handle';
import type { KeelClient } from '../keel-client';
import type { SessionHandle } from '../session-handle';
import { CliExit, resolve, withClient } from './common';
import { followGoal, reportLines } from './goal-view';
import { callLines, visible, type WaitingCall, workspaceOf } from './call-view';
import { EXIT, LineReader, type Output, table } from './output';
import { showPaged } from './pager';
import { MODEL_TOPIC } from '../../workflows/protocol/topics';

export interface GoalCommandOptions {
  workspace?: string;
  autoApprove?: boolean;
  mode?: string;
  budgetUsd?: string;
  model?: string;
  id?: string;
  json?: boolean;
  yes?: boolean;
  detach?: boolean;
}

const MODES = ['read-only', 'ask', 'auto-edit', 'full-auto'] as const;
type Mode = (typeof MODES)[number];

function parseMode(mode: string | undefined): Mode | undefined {
  if (mode === undefined) return undefined;
  if (!(MODES as readonly string[]).includes(mode)) throw new CliExit(EXIT.usage, `--mode must be one of ${MODES.join(', ')}`);
  return mode as Mode;
}

export function goalCommand(text: string, o: GoalCommandOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const mode = parseMode(o.mode);
    const budget = o.budgetUsd === undefined ? undefined : Number(o.budgetUsd);
    if (budget !== undefined && !(budget > 0)) throw new CliExit(EXIT.usage, '--budget-usd must be a positive number');
    const interactive = Boolean(process.stdin.isTTY) && !out.json && !o.yes;
    const goal = await keel.startGoal(text, {
      ...(o.workspace ? { workspace: o.workspace } : {}),
      ...(o.id ? { id: o.id } : {}),
      ...(o.model ? { model: o.model } : {}),
      ...(o.autoApprove ? { autoApprove: true } : {}),
      ...(mode ? { policy: { mode } } : {}),
      ...(budget !== undefined ? { limits: { costUsd: budget } } : {}),
      // Nobody will answer: the policy's headless choice instead of waiting forever.
      ...(!interactive && !o.yes ? { headless: true } : {}),
    });
    if (o.detach) {
      if (out.json) out.emit({ id: goal.id });
      else out.line(goal.id);
      return EXIT.ok;
    }
    if (!out.json) out.line(out.dim(`goal ${goal.id} (follow again with: keel watch ${goal.id})`));
    const ask = interactive ? new LineReader() : null;
    let interrupts = 0;
    const onSigint = () => {
      interrupts += 1;
      if (interrupts >= 2) {
        process.stderr.write(`\nkeel: left goal ${goal.id} running (keel watch ${goal.id}, keel cancel ${goal.id})\n`);
        process.exit(EXIT.detached);
      }
      void (async () => {
        if (ask) {
          out.line(`Cancel goal ${goal.id}? [y/N] (Ctrl-C again leaves it running)`);
          const a = await ask.next('> ');
          if (a?.trim().toLowerCase() !== 'y') {
            interrupts = 0;
            return;
          }
        }
        out.line('cancelling the goal… (Ctrl-C again leaves it running)');
        await goal.cancel('cancelled at the terminal').catch((e: unknown) => out.line(String(e)));
      })();
    };
    process.on('SIGINT', onSigint);
    try {
      const result = await followGoal(goal, { out, yes: Boolean(o.yes), ask });
      if (!result) return EXIT.error;
      printReport(out, goal.id, result);
      return result.verdict === 'goal_met' ? EXIT.ok : EXIT.notMet;
    } finally {
      process.off('SIGINT', onSigint);
      ask?.close();
    }
  });
}

function printReport(out: Output, id: string, result: GoalResult): void {
  if (out.json) out.emit({ id, ...result });
  else for (const line of reportLines(result, out)) out.line(line);
}

export function watchCommand(id: string, o: { json?: boolean; from?: string }): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const from = o.from === undefined ? 0 : Number(o.from);
    const target = await resolve(keel, id);
    const handle: GoalHandle | SessionHandle = target.kind === 'goal' ? target.goal : target.session;
    if (out.json) {
      for await (const item of handle.events({ from })) out.emit(item);
      return EXIT.ok;
    }
    if (target.kind === 'goal') {
      const result = await followGoal(target.goal, { out, yes: false, ask: null, from });
      if (result) printReport(out, id, result);
      return result?.verdict === 'goal_met' ? EXIT.ok : EXIT.notMet;
    }
    for await (const item of target.session.events({ from })) {
      if (item.topic === MODEL_TOPIC) {
        if (item.data.kind === 'delta' && item.data.block === 'text') out.text(item.data.text);
      } else out.line(out.dim(`${item.data.seq} ${item.data.kind} ${summarize(item.data)}`));
    }
    return EXIT.ok;
  });
}

function summarize(e: object): string {
  const rest = Object.fromEntries(Object.entries(e).filter(([k]) => !['kind', 'seq', 'at', 'sessionId', 'workflowId'].includes(k)));
  const text = JSON.stringify(rest);
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

export function statusCommand(id: string, o: { json?: boolean }): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const target = await resolve(keel, id);
    if (target.kind === 'goal') {
      const [state, plan] = await Promise.all([target.goal.state(), target.goal.plan()]);
      if (out.json) {
        out.emit({ id, kind: 'goal', status: state.status, reason: state.reason, waiting: state.waiting ?? null, plan, pendingApprovals: state.pendingApprovals, usage: state.usage, policy: state.policy ?? null });
        return;
      }
      out.line(`goal ${id}: ${out.bold(state.status)}${state.reason ? ` (${state.reason})` : ''}`);
      out.line(`  ${state.goal.goal}`);
      // Still running, but held up by its infrastructure (a store or host away): what, since when, how many tries.
      if (state.waiting) out.line(`  ${state.waiting}`);
      if (plan.tasks.length) for (const row of table([['task', 'status', 'tries', 'title'], ...plan.tasks.map((t) => [t.id, t.status, String(t.attempts), t.title])])) out.line(`  ${row}`);
      for (const p of state.pendingApprovals) out.line(`  waiting: ${p.callId} [${p.taskId}] ${p.name} (keel approve ${id} ${p.callId})`);
      out.line(`  usage: ${state.usage.usage.inputTokens} in / ${state.usage.usage.outputTokens} out tokens, $${state.usage.usage.costUsd.toFixed(4)}`);
      for (const line of policyLines(state.policy)) out.line(`  ${line}`);
      return;
    }
    const state = await target.session.state();
    if (out.json) {
      out.emit({ id, kind: 'session', status: state.status, reason: state.reason, waiting: state.waiting ?? null, turn: state.turn, queueLength: state.queueLength, pendingApprovals: state.pendingApprovals, question: state.question, usage: state.usage, policy: state.policy ?? null });
      return;
    }
    out.line(`session ${id}: ${out.bold(state.status)}${state.reason ? ` (${state.reason})` : ''}`);
    if (state.waiting) out.line(`  ${state.waiting}`);
    if (state.turn) out.line(`  turn ${state.turn.turnId}: ${state.turn.status}`);
    for (const p of state.pendingApprovals) out.line(`  waiting: ${p.callId} ${p.name} ${JSON.stringify(p.input).slice(0, 100)} (keel approve ${id} ${p.callId})`);
    if (state.question) out.line(`  question: ${state.question.question}`);
    out.line(`  turns: ${state.usage.turns}, usage: ${state.usage.usage.inputTokens} in / ${state.usage.usage.outputTokens} out tokens, $${state.usage.usage.costUsd.toFixed(4)}`);
    for (const line of policyLines(state.policy)) out.line(`  ${line}`);
  });
}

export function lsCommand(o: { json?: boolean; waiting?: boolean; kind?: string; status?: string; all?: boolean }): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    if (o.kind && !['goal', 'session', 'agent'].includes(o.kind)) throw new CliExit(EXIT.usage, '--kind must be goal, session or agent');
    const entries = await keel.list({
      ...(o.waiting ? { waitingForApproval: true } : {}),
      ...(o.kind ? { kind: o.kind as 'goal' | 'session' | 'agent' } : {}),
      ...(o.status ? { status: o.status } : {}),
      ...(o.all ? { all: true } : {}),
    });
    if (out.json) {
      out.emit(entries);
      return;
    }
    if (entries.length === 0) {
      out.line(o.waiting ? 'nothing waits for approval' : 'no goals or sessions');
      return;
    }
    for (const row of table([['id', 'kind', 'status', 'waiting', 'started', 'workspace'], ...entries.map((e) => [e.id, e.kind ?? '', e.status ?? e.execution.toLowerCase(), String(e.pendingApprovals), e.startTime.slice(0, 19), e.workspace ?? ''])]))
      out.line(row);
  });
}

export interface AnswerOptions {
  json?: boolean;
  reason?: string;
  scope?: string;
  /** The call to answer; needed when more than one waits. */
  call?: string;
  /** Approve without asking (scripts). */
  yes?: boolean;
}

/**
 * approve / deny: a tool call (named, or the only one waiting) or, on a goal with no call
 * named, its plan. The call is shown whole first (arguments, the diff of an edit), and an
 * approval asks `y` unless --yes: a person approves what they saw.
 */
export function answerCommand(decision: 'approve' | 'deny', id: string, callArg: string | undefined, o: AnswerOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    if (o.call !== undefined && callArg !== undefined && o.call !== callArg) throw new CliExit(EXIT.usage, `two different calls named (${callArg} and --call ${o.call})`);
    const named = o.call ?? callArg;
    const target = await resolve(keel, id);
    const handle = target.kind === 'goal' ? target.goal : target.session;
    if (target.kind === 'goal' && !named) {
      const state = await target.goal.state();
      if (state.status === 'awaiting_plan_approval' && state.pendingApprovals.length === 0) {
        if (decision === 'approve') {
          const plan = await target.goal.plan();
          const lines = [
            `plan v${state.goal.planVersion} of goal ${id}: ${visible(state.goal.goal)}`,
            ...plan.tasks.flatMap((t) => [`  [${t.id}] ${visible(t.title)}${t.dependencies.length ? ` (after ${t.dependencies.join(', ')})` : ''}`, ...visible(t.instructions).split('\n').map((l) => `      ${l}`)]),
          ];
          await confirm(out, lines, { kind: 'plan', goal: id, planVersion: state.goal.planVersion, tasks: plan.tasks }, o.yes);
          return done(out, `plan v${state.goal.planVersion} of ${id} approved`, await target.goal.approvePlan());
        }
        return done(out, `plan of ${id} rejected`, await target.goal.rejectPlan(o.reason ?? 'rejected at the terminal'));
      }
    }
    const waiting: WaitingCall[] = await handle.pendingApprovals();
    const call = pick(waiting, named, id);
    const lines = call ? await callLines(call, await workspaceOf(handle.workflowHandle)) : null;
    if (decision === 'deny') {
      if (lines) for (const l of lines) out.line(l);
      const callId = call?.callId ?? named!;
      const result = await (target.kind === 'goal' ? target.goal.deny(callId, o.reason) : target.session.deny(callId, o.reason));
      return done(out, `denied ${callId}${call ? ` (${call.name})` : ''}`, result);
    }
    // A call named but not waiting: the workflow's refusal says why (answered, unknown).
    if (lines && call) await confirm(out, lines, { kind: 'tool_call', ...call }, o.yes);
    const callId = call?.callId ?? named!;
    const options = scopeOf(o.scope);
    const result = await (target.kind === 'goal' ? target.goal.approve(callId, options) : target.session.approve(callId, options));
    return done(out, `approved ${callId}${call ? ` (${call.name})` : ''}`, result);
  });
}

/** Shows what is about to be approved, then asks `y` (unless --yes). */
async function confirm(out: Output, lines: string[], value: unknown, yes: boolean | undefined): Promise<void> {
  if (out.json) out.emit({ waiting: value });
  const reader = yes ? null : new LineReader();
  try {
    await showPaged(lines, out, reader?.interface);
    if (!reader) return;
    const answer = await reader.next(out.json ? undefined : 'approve? [y/N] ');
    if (answer === null) throw new CliExit(EXIT.usage, 'no answer on stdin: nothing was approved (--yes approves without asking)');
    if (!/^(y|yes)$/i.test(answer.trim())) throw new CliExit(EXIT.rejected, 'not approved: nothing was sent');
  } finally {
    reader?.close();
  }
}

function scopeOf(scope: string | undefined): { scope?: 'once' | 'session'; approver: string } {
  if (scope !== undefined && scope !== 'once' && scope !== 'session') throw new CliExit(EXIT.usage, '--scope must be once or session');
  return { ...(scope ? { scope } : {}), approver: `keel cli (OS user ${os.userInfo().username})` };
}

/** The call named (if it waits), or the only one waiting; several and none named is an error. */
function pick(waiting: WaitingCall[], named: string | undefined, id: string): WaitingCall | undefined {
  if (named !== undefined) return waiting.find((p) => p.callId === named);
  if (waiting.length === 1) return waiting[0]!;
  // Nothing waiting is the workflow's answer (a refusal, 5), not a mistake in the arguments (2).
  if (waiting.length === 0) throw new CliExit(EXIT.rejected, `nothing of ${id} waits for approval`);
  throw new CliExit(EXIT.usage, `${waiting.length} calls of ${id} wait: name one with --call <callId>\n${waiting.map((p) => `  ${p.callId}  ${p.name}${'taskId' in p && p.taskId ? ` (task ${p.taskId})` : ''}`).join('\n')}`);
}

function done(out: Output, text: string, result: unknown): number {
  if (out.json) out.emit(result);
  else out.line(`${text}${result && typeof result === 'object' && 'status' in result ? ` (now ${String(result.status)})` : ''}`);
  return EXIT.ok;
}

type Control = 'interrupt' | 'steer' | 'pause' | 'resume' | 'close' | 'cancel';

export interface ControlOptions {
  json?: boolean;
  reason?: string;
  text?: string;
  /** steer: a sub-agent of the session. */
  agent?: string;
}

export function controlCommand(control: Control, id: string, o: ControlOptions): Promise<void> {
  return withClient(o.json, async (keel: KeelClient, out) => {
    const target = await resolve(keel, id);
    if (target.kind === 'goal') {
      if (control !== 'cancel' && control !== 'close') throw new CliExit(EXIT.usage, `${control} acts on sessions; a goal takes approve, deny, cancel`);
      return done(out, 'cancelled', await target.goal.cancel(o.reason));
    }
    const s = target.session;
    const result =
      control === 'interrupt'
        ? await s.interrupt(o.reason)
        : control === 'steer'
          ? await s.steer(o.text ?? '', o.agent !== undefined ? { agent: o.agent } : {})
          : control === 'pause'
            ? await s.pause(o.reason)
            : control === 'resume'
              ? await s.resume()
              : await s.close(o.reason);
    return done(out, `${control} accepted`, result);
  });
}
