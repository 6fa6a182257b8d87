// AG-UI 1.0 (https://docs.ag-ui.com): a session driven by any AG-UI front end (CopilotKit,
// @ag-ui/client). POST a RunAgentInput:
// - with a new user message: it goes to the session under the message's own id, and that
//   message's turn (matched by id, not by text) comes back as AG-UI events: text as
//   TEXT_MESSAGE_*, thinking as REASONING_*, tool calls as TOOL_CALL_*, and RUN_FINISHED with
//   the turn's usage;
// - a tool call waiting for approval, or a question, ends the run with RUN_FINISHED
//   `outcome: interrupt` (ids `approval:<callId>`, `question:<callId>`); the next
//   RunAgentInput answers them in `resume` and the same turn continues on that run;
// - with no new message (a reloaded thread): MESSAGES_SNAPSHOT and STATE_SNAPSHOT of the
//   session, and any interrupt still waiting.
// - frontend `tools` are offered to the model in the message's turn beside the worker's; when
//   the model calls one, the run ends (RUN_FINISHED, result `client_tools`) after its
//   TOOL_CALL_START/ARGS/END, the client runs it, and the next RunAgentInput, ending with the
//   `tool` message(s), hands the result to the same turn, which goes on on that run.
// `context` entries travel with the message as text; frontend `state` is not used by a Keel
// session and is named in a CUSTOM event.
import { randomUUID } from 'node:crypto';
import { EventType, type BaseEvent, type Message as AgUiMessage } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { z } from 'zod';
import type { SessionStreamItem } from '../client/events';
import type { KeelClient } from '../client/keel-client';
import type { SessionHandle } from '../client/session-handle';
import type { Usage } from '../machines/budget';
import type { StateView } from '../workflows/definitions';
import { UpdateRejectedError } from '../client/errors';
import type { ClientTool } from '../workflows/client-tools';
import { ProblemError } from './problem';
import { kindOf } from './routes';
import { agUiRunInput } from './schemas';
import { MODEL_TOPIC } from '../workflows/protocol/topics';

type RunInput = z.output<typeof agUiRunInput>;
type Ids = { threadId: string; runId: string };
type Interrupt = { id: string; reason: string; message?: string; toolCallId?: string; responseSchema?: Record<string, unknown> };

const KEEP_ALIVE_MS = 15_000;
const DEADLINE_MS = 15_000;

const approvalSchema = { type: 'object', properties: { approved: { type: 'boolean' }, reason: { type: 'string' } }, required: ['approved'] };
const answerSchema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };

export const approvalInterrupt = (p: { callId: string; name: string; reason: string | null }): Interrupt => ({
  id: `approval:${p.callId}`,
  reason: 'tool_approval',
  message: `${p.name} waits for approval${p.reason ? `: ${p.reason}` : ''}`,
  toolCallId: p.callId,
  responseSchema: approvalSchema,
});
export const questionInterrupt = (q: { callId: string; question: string }): Interrupt => ({ id: `question:${q.callId}`, reason: 'question', message: q.question, responseSchema: answerSchema });

/** Which turn is this run's: the one that starts for our message id (turns start in queue order). */
class TurnMatcher {
  turnId: string | null = null;
  private startsToSkip: number | null = null;

  constructor(
    private readonly messageId: string,
    private readonly text: string,
  ) {}

  /** Also attachable directly (a resumed run continues the running turn). */
  attach(turnId: string): void {
    this.turnId = turnId;
  }

  see(e: { kind: string; [k: string]: unknown }): void {
    if (this.turnId !== null) return;
    if (e.kind === 'session.message_received' && e.messageId === this.messageId) {
      // Not queued: the next turn is ours; queued behind n-1 others: the n-th turn to start.
      this.startsToSkip = e.queued === true && typeof e.queueLength === 'number' ? Math.max(0, e.queueLength - 1) : 0;
    } else if (e.kind === 'turn.started' && this.startsToSkip !== null) {
      if (this.startsToSkip === 0 || (e.input as string).trim() === this.text) this.turnId = e.turnId as string;
      else this.startsToSkip--;
    }
  }
}

/** Maps the session's stream items of one turn to AG-UI events. */
export class AgUiMapper {
  finished = false;
  private openText: string | null = null;
  private openReasoning: string | null = null;
  private usage: Usage | null = null;
  private readonly resulted = new Set<string>();
  private model: string | null = null;
  /** Sub-agents shown as steps in this run (STEP_STARTED sent, STEP_FINISHED not yet), by name. */
  private readonly openSteps = new Set<string>();

  /** Calls of the client's tools in this run (their results are the client's own tool messages). */
  private readonly clientCalls = new Set<string>();

  constructor(
    private readonly ids: Ids,
    readonly matcher: TurnMatcher,
    private readonly clientToolNames: ReadonlySet<string> = new Set(),
    answered: readonly string[] = [],
  ) {
    for (const callId of answered) this.clientCalls.add(callId);
  }

  started(): BaseEvent[] {
    return [{ type: EventType.RUN_STARTED, threadId: this.ids.threadId, runId: this.ids.runId }];
  }

  map(item: SessionStreamItem): BaseEvent[] {
    const out: BaseEvent[] = [];
    if (item.topic === MODEL_TOPIC) {
      if (this.matcher.turnId === null) return out;
      const m = item.data;
      const messageId = `msg-${m.callId ?? 'model'}-${m.attempt}`;
      if (m.kind === 'start' || m.kind === 'retry') {
        if (m.kind === 'start') this.model = m.model;
        // Text read live comes before its call's markers (client/live-model.ts): a marker ends
        // what an earlier call or attempt showed, not its own message.
        out.push(...this.closeOthers(messageId));
      } else if (m.kind === 'stop') {
        out.push(...this.close());
      } else if (m.kind === 'delta' && m.block === 'thinking') {
        if (this.openReasoning !== messageId) {
          out.push(...this.close());
          out.push({ type: EventType.REASONING_START, messageId }, { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' });
          this.openReasoning = messageId;
        }
        if (m.text) out.push({ type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: m.text });
      } else if (m.kind === 'delta') {
        if (this.openText !== messageId) {
          out.push(...this.close());
          out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
          this.openText = messageId;
        }
        if (m.text) out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: m.text });
      }
      return out;
    }
    const e = item.data as unknown as { kind: string; [k: string]: unknown };
    if (this.matcher.turnId === null) {
      this.matcher.see(e);
      return out;
    }
    const mine = (e.turnId === undefined || e.turnId === this.matcher.turnId) && !this.finished;
    if (!mine) return out;
    switch (e.kind) {
      case 'tool.call':
        if (this.clientToolNames.has(e.toolName as string)) this.clientCalls.add(e.callId as string);
        out.push(...this.close());
        out.push(
          { type: EventType.TOOL_CALL_START, toolCallId: e.callId, toolCallName: e.toolName },
          { type: EventType.TOOL_CALL_ARGS, toolCallId: e.callId, delta: JSON.stringify(e.arguments) },
          { type: EventType.TOOL_CALL_END, toolCallId: e.callId },
        );
        break;
      case 'tool.approval_requested':
        out.push(...this.close(), ...this.interrupt([approvalInterrupt({ callId: e.callId as string, name: e.toolName as string, reason: (e.policyReason as string | null) ?? null })]));
        break;
      case 'session.input_requested':
        out.push(...this.close(), ...this.interrupt([questionInterrupt({ callId: e.callId as string, question: e.question as string })]));
        break;
      case 'tool.client_requested': {
        // The client runs its tools: this run ends here, the next one brings the results.
        const waiting = [...this.clientCalls].filter((c) => !this.resulted.has(c));
        out.push(...this.close(), ...this.finish({ type: 'success' }, { outcome: 'client_tools', turnId: e.turnId, callIds: waiting }));
        break;
      }
      case 'tool.result':
        this.resulted.add(e.callId as string);
        // A client tool's result is already the client's own tool message.
        if (this.clientCalls.has(e.callId as string)) break;
        out.push({ type: EventType.TOOL_CALL_RESULT, messageId: `result-${e.callId as string}`, toolCallId: e.callId, content: e.output, role: 'tool' });
        break;
      // A sub-agent's work is a step of the run, named for the child (research-1, fork-3). A child
      // started in an earlier run of the thread (before an approval's interrupt) ends as a step of its own here.
      case 'subagent.started':
        out.push(...this.close(), { type: EventType.STEP_STARTED, stepName: e.label });
        this.openSteps.add(e.label as string);
        break;
      case 'subagent.finished':
        if (!this.openSteps.delete(e.label as string)) out.push({ type: EventType.STEP_STARTED, stepName: e.label });
        out.push({ type: EventType.STEP_FINISHED, stepName: e.label });
        break;
      case 'turn.completed':
        this.usage = e.usage as Usage;
        break;
      case 'turn.error':
        out.push(...this.close(), { type: EventType.RUN_ERROR, message: e.message, code: e.errorType });
        this.finished = true;
        break;
      case 'session.turn_finished':
        out.push(...this.close(), ...this.finish({ type: 'success' }, { outcome: e.outcome, turnId: e.turnId }));
        break;
      default:
        break;
    }
    return out;
  }

  interrupt(interrupts: Interrupt[]): BaseEvent[] {
    return this.finish({ type: 'interrupt', interrupts });
  }

  private finish(outcome: Record<string, unknown>, result?: unknown): BaseEvent[] {
    this.finished = true;
    // Steps still open (children that go on past an interrupt) end with the run, as AG-UI asks.
    const steps = [...this.openSteps].map((stepName): BaseEvent => ({ type: EventType.STEP_FINISHED, stepName }));
    this.openSteps.clear();
    const u = this.usage;
    const done: BaseEvent = {
      type: EventType.RUN_FINISHED,
      threadId: this.ids.threadId,
      runId: this.ids.runId,
      outcome,
      ...(result !== undefined ? { result } : {}),
      ...(u ? { usage: [{ provider: 'anthropic', ...(this.model ? { model: this.model } : {}), inputTokens: u.inputTokens, outputTokens: u.outputTokens, totalTokens: u.inputTokens + u.outputTokens }] } : {}),
    };
    return [...steps, done];
  }

  /** Closes what is open for another message than `messageId` (another call, or an earlier attempt); everything when null. */
  private closeOthers(messageId: string | null): BaseEvent[] {
    const out: BaseEvent[] = [];
    if (this.openText !== null && this.openText !== messageId) {
      out.push({ type: EventType.TEXT_MESSAGE_END, messageId: this.openText });
      this.openText = null;
    }
    if (this.openReasoning !== null && this.openReasoning !== messageId) {
      out.push({ type: EventType.REASONING_MESSAGE_END, messageId: this.openReasoning }, { type: EventType.REASONING_END, messageId: this.openReasoning });
      this.openReasoning = null;
    }
    return out;
  }

  private close(): BaseEvent[] {
    return this.closeOthers(null);
  }
}

/** A RunAgentInput's frontend tools as a session's client tools. */
function clientToolsOf(input: RunInput): ClientTool[] {
  return (input.tools ?? []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters ?? { type: 'object', properties: {} } }));
}

/** The `tool` messages after the thread's last assistant message: results of the client's tools. */
function trailingToolResults(messages: RunInput['messages']): Array<{ callId: string; output: string; isError: boolean }> {
  const out: Array<{ callId: string; output: string; isError: boolean }> = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) {
    const m = messages[i]! as { toolCallId?: unknown; content?: unknown; error?: unknown };
    if (typeof m.toolCallId !== 'string' || !m.toolCallId) continue;
    const output = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
    const error = typeof m.error === 'string' && m.error ? m.error : null;
    out.unshift({ callId: m.toolCallId, output: error ?? output, isError: error !== null });
  }
  return out;
}

/** Hands the client's results to the turn; a result for a call that no longer waits (a resent thread) is skipped. */
async function applyToolResults(session: SessionHandle, results: ReadonlyArray<{ callId: string; output: string; isError: boolean }>): Promise<string[]> {
  const answered: string[] = [];
  for (const r of results) {
    try {
      await session.clientToolResult(r.callId, r.output, { isError: r.isError });
      answered.push(r.callId);
    } catch (error) {
      if (!(error instanceof UpdateRejectedError)) throw error;
    }
  }
  return answered;
}

/** The last user message of a RunAgentInput: its id and text. */
function lastUser(messages: RunInput['messages']): { id: string; text: string } | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    if (typeof m.content === 'string') return { id: m.id, text: m.content };
    if (Array.isArray(m.content)) {
      const parts = m.content.flatMap((p: unknown) => (p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' && typeof (p as { text?: unknown }).text === 'string' ? [(p as { text: string }).text] : []));
      return { id: m.id, text: parts.join('\n') };
    }
    return null;
  }
  return null;
}

type Block = { type: string; text?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };

/** The session's conversation as AG-UI messages (for a reloaded thread). */
export function toAgUiMessages(sessionId: string, messages: ReadonlyArray<{ role: string; content: string | Block[] }>): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  messages.forEach((m, i) => {
    const blocks: Block[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const text = blocks.flatMap((b) => (b.type === 'text' && b.text ? [b.text] : [])).join('\n');
    if (m.role === 'assistant') {
      const toolCalls = blocks.flatMap((b) => (b.type === 'tool_use' ? [{ id: b.id!, type: 'function' as const, function: { name: b.name!, arguments: JSON.stringify(b.input ?? {}) } }] : []));
      out.push({ id: `${sessionId}-m${i}`, role: 'assistant', ...(text ? { content: text } : {}), ...(toolCalls.length ? { toolCalls } : {}) });
      return;
    }
    for (const b of blocks) {
      if (b.type !== 'tool_result') continue;
      const content = typeof b.content === 'string' ? b.content : Array.isArray(b.content) ? (b.content as Block[]).map((c) => c.text ?? '').join('\n') : '';
      out.push({ id: `${sessionId}-m${i}-${b.tool_use_id!}`, role: 'tool', toolCallId: b.tool_use_id!, content, ...(b.is_error ? { error: content } : {}) });
    }
    if (text) out.push({ id: `${sessionId}-m${i}`, role: 'user', content: text });
  });
  return out;
}

const waitingInterrupts = (state: StateView): Interrupt[] => [
  ...state.pendingApprovals.map((p) => approvalInterrupt(p)),
  ...(state.question ? [questionInterrupt(state.question)] : []),
];

/** Answers the interrupts a RunAgentInput's resume entries name. */
async function applyResume(session: SessionHandle, resume: NonNullable<RunInput['resume']>, approver: string): Promise<void> {
  for (const r of resume) {
    const [kind, callId] = [r.interruptId.slice(0, r.interruptId.indexOf(':')), r.interruptId.slice(r.interruptId.indexOf(':') + 1)];
    const payload = (r.payload ?? {}) as { approved?: unknown; reason?: unknown; answer?: unknown };
    if (kind === 'approval') {
      if (r.status === 'resolved' && payload.approved !== false) await session.approve(callId, { approver });
      else await session.deny(callId, typeof payload.reason === 'string' && payload.reason.trim() ? payload.reason : r.status === 'cancelled' ? 'cancelled by the AG-UI client' : 'denied');
    } else if (kind === 'question') {
      if (r.status === 'resolved') await session.answer(typeof payload.answer === 'string' ? payload.answer : typeof r.payload === 'string' ? r.payload : JSON.stringify(r.payload ?? ''));
      else await session.interrupt('question cancelled by the AG-UI client');
    } else {
      throw new ProblemError(400, 'validation', `unknown interrupt ${r.interruptId}: Keel's are approval:<callId> and question:<callId>`, { errors: [{ pointer: '/body/resume', message: 'unknown interrupt' }] });
    }
  }
}

export async function agUiRun(c: Context, keel: KeelClient, id: string, body: unknown, approver: string): Promise<Response> {
  const parsed = agUiRunInput.safeParse(body);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ pointer: `/body/${i.path.map(String).join('/')}`, message: i.message }));
    throw new ProblemError(400, 'validation', errors.map((e) => `${e.pointer}: ${e.message}`).join('; '), { errors });
  }
  const input = parsed.data;
  const session = keel.getSession(id);
  const ids: Ids = { threadId: input.threadId, runId: input.runId || randomUUID() };
  const user = lastUser(input.messages);
  const text = user?.text.trim() ?? '';
  const contextText = (input.context ?? []).map((x) => `- ${x.description}: ${x.value}`).join('\n');
  const clientTools = clientToolsOf(input);
  const toolResults = trailingToolResults(input.messages);
  // AG-UI clients send the whole thread on every run: a new message is the last one. A thread
  // that ends with the agent's reply, or an empty one (a reloaded page), asks for a snapshot.
  const newMessage = user !== null && text !== '' && input.messages.at(-1)?.role === 'user';
  // The session's state is read only for what needs it: frontend tools (their names checked
  // against the session's), tool results and resumes (the turn they go to), a snapshot. A plain
  // new message needs none of it.
  const needsState = clientTools.length > 0 || toolResults.length > 0 || (input.resume?.length ?? 0) > 0 || !newMessage;

  // Everything that talks to the workflow before the stream opens is bounded, like every
  // request. The reads before the message goes (what the id is, the stream's offset, the state)
  // go at once, side by side: one round trip to the workflow, then the message's update, then
  // the stream (it was four in a row: describe, state, offset, update).
  const start = await keel.client.connection.withDeadline(Date.now() + DEADLINE_MS, async () => {
    const [kind, state, offset] = await Promise.allSettled([kindOf(keel, id), needsState ? session.state() : Promise.resolve(null), session.streamOffset()]);
    // What the id is answers first: a goal's or a missing workflow's other reads fail for that reason.
    if (kind.status === 'rejected') throw kind.reason;
    if (kind.value !== 'session') throw new ProblemError(404, 'not-found', `${id} is a goal: AG-UI drives sessions`);
    if (state.status === 'rejected') throw state.reason;
    if (offset.status === 'rejected') throw offset.reason;
    const from = offset.value;
    const clashes = state.value === null ? [] : clientTools.filter((t) => state.value!.tools.includes(t.name)).map((t) => t.name);
    if (clashes.length) {
      throw new ProblemError(400, 'validation', `frontend tools ${clashes.join(', ')} have the names of the session's own tools`, { errors: [{ pointer: '/body/tools', message: 'name taken by a session tool' }] });
    }
    // A thread that ends with results of the client's tools: they go to the turn that waits for them.
    const answered = toolResults.length && state.value?.turn ? await applyToolResults(session, toolResults) : [];
    if (input.resume?.length) await applyResume(session, input.resume, approver);
    if (answered.length || input.resume?.length) return { kind: 'resume' as const, from, turnId: state.value?.turn?.turnId ?? null, answered };
    if (!newMessage) {
      const transcript = await session.transcript(0, 500);
      return { kind: 'snapshot' as const, state: state.value!, messages: toAgUiMessages(id, transcript.messages) };
    }
    await session.post(contextText ? `${text}\n\nContext from the application:\n${contextText}` : text, user.id, { clientTools });
    return { kind: 'message' as const, from };
  });

  return streamSSE(c, async (stream) => {
    const abort = new AbortController();
    stream.onAbort(() => abort.abort());
    const send = async (events: BaseEvent[]) => {
      // Every event is checked against AG-UI's own schema before it leaves.
      for (const e of events) await stream.writeSSE({ data: JSON.stringify(EventSchemas.parse(e)) });
    };
    const matcher = new TurnMatcher(user?.id ?? '', contextText ? '' : text);
    const mapper = new AgUiMapper(ids, matcher, new Set(clientTools.map((t) => t.name)), start.kind === 'resume' ? start.answered : []);
    await send(mapper.started());
    if (input.state !== undefined && input.state !== null && Object.keys(input.state).length) {
      await send([{ type: EventType.CUSTOM, name: 'keel.unused_input', value: { fields: ['state'], why: 'a Keel session keeps its own state; frontend state is not passed to it' } }]);
    }

    if (start.kind === 'snapshot') {
      const state = start.state;
      await send([
        { type: EventType.MESSAGES_SNAPSHOT, messages: start.messages },
        {
          type: EventType.STATE_SNAPSHOT,
          snapshot: {
            status: state.status,
            reason: state.reason,
            pendingApprovals: state.pendingApprovals.map((p) => ({ callId: p.callId, toolName: p.name })),
            question: state.question,
            clientToolCalls: state.clientToolCalls ?? [],
            usage: state.usage.usage,
          },
        },
      ]);
      const waiting = waitingInterrupts(state);
      await send(waiting.length ? mapper.interrupt(waiting) : [{ type: EventType.RUN_FINISHED, ...ids, outcome: { type: 'success' } }]);
      return;
    }
    if (start.kind === 'resume') {
      if (start.turnId === null) {
        await send([{ type: EventType.RUN_FINISHED, ...ids, outcome: { type: 'success' } }]);
        return;
      }
      matcher.attach(start.turnId);
      // Interrupts the resume did not answer (calls of the same step) end this run at once.
      const still = waitingInterrupts(await session.state()).filter((i) => !(input.resume ?? []).some((r) => r.interruptId === i.id));
      if (still.length) {
        await send(mapper.interrupt(still));
        return;
      }
    }
    await follow(stream, session, start.from, mapper, send, abort);
    if (!mapper.finished) await send([{ type: EventType.RUN_ERROR, message: `session ${id} ended before the turn finished` }]);
  });
}

async function follow(stream: SSEStreamingApi, session: SessionHandle, from: number, mapper: AgUiMapper, send: (e: BaseEvent[]) => Promise<void>, abort: AbortController): Promise<void> {
  // A comment now and then keeps proxies from closing a run that waits for the model.
  const ping = setInterval(() => void stream.write(': ping\n\n').catch(() => abort.abort()), KEEP_ALIVE_MS);
  try {
    for await (const item of session.events({ from, signal: abort.signal })) {
      await send(mapper.map(item));
      if (mapper.finished) break;
    }
  } finally {
    clearInterval(ping);
    abort.abort();
  }
}
