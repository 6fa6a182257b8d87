// AG-UI (https://docs.ag-ui.com): a session driven by any AG-UI front end. POST a
// RunAgentInput; its last user message goes to the session, and the turn comes back as
// AG-UI events over SSE — text as TEXT_MESSAGE_*, tool calls as TOOL_CALL_*, a call
// waiting for a human as a CUSTOM `keel.approval_requested` (answer it with /approve).
import { randomUUID } from 'node:crypto';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { SessionStreamItem } from '../client/events';
import type { KeelClient } from '../client/keel-client';
import { ProblemError } from './problem';
import { kindOf } from './routes';
import { agUiRunInput } from './schemas';

/** Maps one session stream item to AG-UI events; tracks the open text message and the turn. */
export class AgUiMapper {
  turnId: string | null = null;
  private openMessage: string | null = null;
  finished = false;

  constructor(
    private readonly input: string,
    private readonly ids: { threadId: string; runId: string },
  ) {}

  started(): BaseEvent[] {
    return [{ type: EventType.RUN_STARTED, threadId: this.ids.threadId, runId: this.ids.runId }];
  }

  map(item: SessionStreamItem): BaseEvent[] {
    const out: BaseEvent[] = [];
    if (item.topic === 'model') {
      if (this.turnId === null) return out;
      const m = item.data;
      const messageId = `msg-${m.callId ?? 'model'}-${m.attempt}`;
      if (m.kind === 'start' || m.kind === 'retry') {
        out.push(...this.closeMessage());
      } else if (m.kind === 'delta' && m.block === 'text') {
        if (this.openMessage !== messageId) {
          out.push(...this.closeMessage());
          out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
          this.openMessage = messageId;
        }
        out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: m.text });
      } else if (m.kind === 'stop') {
        out.push(...this.closeMessage());
      }
      return out;
    }
    const e = item.data;
    if (this.turnId === null) {
      if (e.kind === 'turn.started' && e.input.trim() === this.input.trim()) this.turnId = e.turnId;
      return out;
    }
    if (e.kind === 'tool.call') {
      out.push(...this.closeMessage());
      out.push(
        { type: EventType.TOOL_CALL_START, toolCallId: e.callId, toolCallName: e.toolName },
        { type: EventType.TOOL_CALL_ARGS, toolCallId: e.callId, delta: JSON.stringify(e.arguments) },
        { type: EventType.TOOL_CALL_END, toolCallId: e.callId },
      );
    } else if (e.kind === 'tool.approval_requested') {
      out.push({ type: EventType.CUSTOM, name: 'keel.approval_requested', value: { callId: e.callId, toolName: e.toolName, reason: e.policyReason } });
    } else if (e.kind === 'tool.result') {
      out.push({ type: EventType.TOOL_CALL_RESULT, messageId: `result-${e.callId}`, toolCallId: e.callId, content: e.output, role: 'tool' });
    } else if (e.kind === 'turn.error' && e.turnId === this.turnId) {
      out.push(...this.closeMessage());
      out.push({ type: EventType.RUN_ERROR, message: e.message, code: e.errorType });
      this.finished = true;
    } else if (e.kind === 'session.turn_finished' && e.turnId === this.turnId && !this.finished) {
      out.push(...this.closeMessage());
      out.push({ type: EventType.RUN_FINISHED, threadId: this.ids.threadId, runId: this.ids.runId, result: { outcome: e.outcome } });
      this.finished = true;
    }
    return out;
  }

  private closeMessage(): BaseEvent[] {
    if (this.openMessage === null) return [];
    const messageId = this.openMessage;
    this.openMessage = null;
    return [{ type: EventType.TEXT_MESSAGE_END, messageId }];
  }
}

/** The text of the last user message of a RunAgentInput. */
function lastUserText(messages: ReadonlyArray<{ role: string; content?: unknown }>): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content)) {
      const text = m.content.flatMap((p: unknown) => (p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' && typeof (p as { text?: unknown }).text === 'string' ? [(p as { text: string }).text] : [])).join('\n');
      return text;
    }
  }
  return null;
}

export async function agUiRun(c: Context, keel: KeelClient, id: string, body: unknown): Promise<Response> {
  const parsed = agUiRunInput.safeParse(body);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ pointer: `/body/${i.path.map(String).join('/')}`, message: i.message }));
    throw new ProblemError(400, 'validation', errors.map((e) => `${e.pointer}: ${e.message}`).join('; '), { errors });
  }
  const text = lastUserText(parsed.data.messages)?.trim();
  if ((await kindOf(keel, id)) !== 'session') throw new ProblemError(404, 'not-found', `${id} is a goal: AG-UI drives sessions`);
  const session = keel.getSession(id);
  const ids = { threadId: parsed.data.threadId, runId: parsed.data.runId || randomUUID() };
  const mapper = new AgUiMapper(text ?? '', ids);
  if (!text) {
    // No user message to send: a run that starts and finishes at once.
    return streamSSE(c, async (stream) => {
      for (const e of [...mapper.started(), { type: EventType.RUN_FINISHED, ...ids } as BaseEvent]) await stream.writeSSE({ data: JSON.stringify(EventSchemas.parse(e)) });
    });
  }
  // Bounded like every other request: a session whose worker is down does not hang it.
  const from = await keel.client.connection.withDeadline(Date.now() + 15_000, async () => {
    const offset = await session.streamOffset();
    await session.post(text);
    return offset;
  });
  return streamSSE(c, async (stream) => {
    const abort = new AbortController();
    stream.onAbort(() => abort.abort());
    const send = async (events: BaseEvent[]) => {
      // Every event is checked against AG-UI's own schema before it leaves.
      for (const e of events) await stream.writeSSE({ data: JSON.stringify(EventSchemas.parse(e)) });
    };
    await send(mapper.started());
    for await (const item of session.events({ from, signal: abort.signal })) {
      await send(mapper.map(item));
      if (mapper.finished) break;
    }
    abort.abort();
    if (!mapper.finished) await send([{ type: EventType.RUN_ERROR, message: `session ${id} ended before the turn finished` }]);
  });
}
