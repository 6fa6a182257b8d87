// Client tools (AG-UI "frontend tools"): tools a client declares with its message, which the
// model may call in that message's turn and which the client runs, not the worker. A call
// of one runs like any tool in the turn machine; only its execution differs: instead of an
// activity, the session records `tool.client_requested` and waits until the client sends
// the result (the `clientToolResult` update), then the turn goes on as after any tool.
// Nothing here runs for a message without client tools, so older histories replay as they
// were recorded.
import { z } from 'zod';
import type { Json, TurnEvent } from '../machines/index';
import { lazySchema } from '../machines/lazy-schema';

/** Anthropic's tool-name rule; a JSON Schema object as the input, like every tool's. */
export const clientToolSchema = lazySchema(() => z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'a tool name is 1-128 letters, digits, _ or -'),
  description: z.string().max(4096),
  inputSchema: z.looseObject({ type: z.literal('object') }),
}));
export type ClientTool = z.output<typeof clientToolSchema>;
export const clientToolsSchema = lazySchema(() => z
  .array(clientToolSchema)
  .max(64)
  .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, { message: 'client tool names must be unique' })
  .refine((tools) => JSON.stringify(tools).length <= 64 * 1024, { message: 'client tools must fit in 64 KiB' }));

export const clientToolResultSchema = lazySchema(() => z.strictObject({
  callId: z.string().min(1).max(256),
  output: z.string().max(256 * 1024),
  isError: z.boolean().optional(),
}));
export type ClientToolResultInput = z.input<typeof clientToolResultSchema>;

/** A client tool call waiting for its result. */
export interface ClientToolCall {
  callId: string;
  name: string;
  input: Json;
}

export interface ClientToolsCarry {
  byMessage: Array<[string, ClientTool[]]>;
  turn: { turnId: string; tools: ClientTool[] } | null;
}

type ToolEvent = Extract<TurnEvent, { type: 'tool' }>['event'];
type Result = { output: string; isError: boolean };

/** How many queued messages may carry client tools (older offers are dropped first). */
const MAX_OFFERS = 64;

export class ClientTools {
  private readonly byMessage: Map<string, ClientTool[]>;
  private turn: { turnId: string; tools: ClientTool[] } | null;
  private readonly waiting = new Map<string, { call: ClientToolCall; deliver: (event: ToolEvent) => void }>();
  /** Results sent for calls of this turn that had not started yet (they run one by one). */
  private readonly early = new Map<string, Result>();

  constructor(carry?: ClientToolsCarry) {
    this.byMessage = new Map(carry?.byMessage ?? []);
    this.turn = carry?.turn ?? null;
  }

  /** The tools a message declared, for the turn it will start. */
  offer(messageId: string, tools: readonly ClientTool[]): void {
    if (tools.length === 0) return;
    this.byMessage.delete(messageId);
    this.byMessage.set(messageId, [...tools]);
    while (this.byMessage.size > MAX_OFFERS) this.byMessage.delete(this.byMessage.keys().next().value!);
  }

  /** A turn starts for a message: its tools (minus names the worker's tools already use) are the turn's. */
  started(turnId: string, messageId: string | undefined, workerTools: readonly string[]): void {
    const tools = messageId === undefined ? undefined : this.byMessage.get(messageId);
    if (messageId !== undefined) this.byMessage.delete(messageId);
    if (this.turn?.turnId === turnId && tools === undefined) return;
    this.turn = tools ? { turnId, tools: tools.filter((t) => !workerTools.includes(t.name)) } : null;
    this.waiting.clear();
    this.early.clear();
  }

  /** The client tools the model is offered in this turn. */
  of(turnId: string): readonly ClientTool[] {
    return this.turn?.turnId === turnId ? this.turn.tools : [];
  }

  has(turnId: string, name: string): boolean {
    return this.of(turnId).some((t) => t.name === name);
  }

  /** The turn runs a client call: it waits for the client (or takes a result sent early). */
  run(call: ClientToolCall, deliver: (event: ToolEvent) => void): void {
    const early = this.early.get(call.callId);
    if (early !== undefined) {
      this.early.delete(call.callId);
      deliver(toolEvent(early));
      return;
    }
    this.waiting.set(call.callId, { call, deliver });
  }

  /** The calls the client must run now. */
  calls(): ClientToolCall[] {
    return [...this.waiting.values()].map((w) => w.call);
  }

  waits(callId: string): boolean {
    return this.waiting.has(callId);
  }

  /** The client's result; `expected`: the call is one of this turn's client calls that has not started yet. */
  result(callId: string, result: Result, expected: boolean): boolean {
    const w = this.waiting.get(callId);
    if (w !== undefined) {
      this.waiting.delete(callId);
      w.deliver(toolEvent(result));
      return true;
    }
    if (!expected) return false;
    this.early.set(callId, result);
    return true;
  }

  carry(): ClientToolsCarry | undefined {
    if (this.byMessage.size === 0 && this.turn === null) return undefined;
    return { byMessage: [...this.byMessage.entries()], turn: this.turn };
  }
}

const toolEvent = (r: Result): ToolEvent => (r.isError ? { type: 'failed', error: r.output } : { type: 'succeeded', output: r.output });

/** The tool definition the model gets. */
export const modelToolOf = (t: ClientTool) => ({ name: t.name, description: t.description, input_schema: t.inputSchema });
