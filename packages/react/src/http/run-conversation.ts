// Any agent's conversation from its stream alone: the model's text of each call, the tools it
// called with their arguments, what each answered, and what a human or the policy decided.
// A task agent or a sub-agent has no transcript query (only a session has one), but its stream
// holds all of this, before and after it ends; the console's agent page and the hooks
// (useRun) read it the same way.
import type { LogEntry, ModelCall, RunStream } from './run-state';

export type ConversationEntry =
  | { type: 'model'; key: string; call: ModelCall }
  | { type: 'tool_call'; key: string; callId: string; toolName: string; input: unknown }
  | { type: 'tool_result'; key: string; callId: string; status: string; output: string }
  | { type: 'decision'; key: string; callId: string; kind: 'approval_requested' | 'approved' | 'denied'; by: string | null; reason: string | null };

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function entryOf(e: LogEntry): ConversationEntry | null {
  const key = `e${e.seq}`;
  const callId = str(e.callId) ?? '';
  switch (e.kind) {
    case 'tool.call':
      return { type: 'tool_call', key, callId, toolName: str(e.toolName) ?? 'tool', input: e.arguments };
    case 'tool.result':
      return { type: 'tool_result', key, callId, status: str(e.status) ?? 'success', output: str(e.output) ?? '' };
    case 'tool.approval_requested':
    case 'agent.approval_requested':
      return { type: 'decision', key, callId, kind: 'approval_requested', by: null, reason: str(e.policyReason) ?? str(e.reason) };
    case 'tool.approved':
      return { type: 'decision', key, callId, kind: 'approved', by: str(e.approver), reason: null };
    case 'tool.denied':
      return { type: 'decision', key, callId, kind: 'denied', by: str(e.by), reason: str(e.reason) };
    default:
      return null;
  }
}

/** The run's conversation in the order it happened: each model call before the events that followed its start. */
export function conversationOf(run: Pick<RunStream, 'events' | 'calls'>): ConversationEntry[] {
  const out: ConversationEntry[] = [];
  const calls = run.calls.filter((c) => c.text || c.thinking);
  let next = 0;
  run.events.forEach((e, i) => {
    while (next < calls.length && (calls[next]!.order ?? 0) <= i) out.push({ type: 'model', key: calls[next]!.key, call: calls[next++]! });
    const entry = entryOf(e);
    if (entry) out.push(entry);
  });
  while (next < calls.length) out.push({ type: 'model', key: calls[next]!.key, call: calls[next++]! });
  return out;
}
