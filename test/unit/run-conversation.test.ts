// Any agent's conversation and its run at a glance, from its stream alone
// (packages/react/src/http/run-conversation.ts, run-glance.ts): a task agent has no
// transcript query, and its console page showed no conversation, cost, steps or time.
import { describe, expect, it } from 'vitest';
import { conversationOf } from '../../packages/react/src/http/run-conversation';
import { formatDuration, glanceOf } from '../../packages/react/src/http/run-glance';
import { applyRunItem, emptyRun, endRun, type ModelCall, type StreamItem } from '../../packages/react/src/http/run-state';

function replay(items: StreamItem[], ended = true) {
  const run = emptyRun();
  const byKey = new Map<string, ModelCall>();
  for (const item of items) applyRunItem(run, byKey, item);
  if (ended) endRun(run);
  return run;
}

let offset = 0;
const ev = (seq: number, kind: string, at: string, fields: Record<string, unknown> = {}): StreamItem => ({ topic: 'events', offset: offset++, data: { kind, seq, at, ...fields } });
const model = (callId: string, kind: string, text?: string): StreamItem => ({ topic: 'model', offset: offset++, data: { kind, callId, attempt: 1, ...(text ? { text, block: 'text' } : {}), model: 'claude-sonnet-4-5' } });

const agentStream = (): StreamItem[] => [
  ev(0, 'turn.started', '2026-01-01T10:00:00.000Z', { turnId: 't1' }),
  model('c1', 'start'),
  model('c1', 'delta', 'I will write the file.'),
  model('c1', 'stop'),
  ev(1, 'tool.call', '2026-01-01T10:00:02.000Z', { callId: 'toolu_1', toolName: 'write_file', arguments: { path: 'a.txt', content: 'x' } }),
  ev(2, 'tool.approval_requested', '2026-01-01T10:00:02.100Z', { callId: 'toolu_1', toolName: 'write_file', policyReason: 'ask mode' }),
  ev(3, 'tool.approved', '2026-01-01T10:00:30.000Z', { callId: 'toolu_1', approver: 'Ada', scope: 'once' }),
  ev(4, 'tool.result', '2026-01-01T10:00:30.500Z', { callId: 'toolu_1', status: 'success', output: 'wrote a.txt' }),
  model('c2', 'start'),
  model('c2', 'delta', 'Done.'),
  model('c2', 'stop'),
  ev(5, 'turn.completed', '2026-01-01T10:01:05.000Z', { turnId: 't1' }),
];

describe('an agent run read from its stream', () => {
  it('is a conversation in the order it happened: text, tool call, approval, result, text', () => {
    const entries = conversationOf(replay(agentStream()));
    expect(entries.map((e) => (e.type === 'model' ? `model:${e.call.text}` : e.type === 'decision' ? `decision:${e.kind}:${e.by ?? ''}` : e.type === 'tool_call' ? `call:${e.toolName}` : `result:${e.output}`))).toEqual([
      'model:I will write the file.',
      'call:write_file',
      'decision:approval_requested:',
      'decision:approved:Ada',
      'result:wrote a.txt',
      'model:Done.',
    ]);
  });

  it('counts model and tool calls and the time from the first event to the last (or to now while it runs)', () => {
    expect(glanceOf(replay(agentStream()))).toEqual({ modelCalls: 2, toolCalls: 1, elapsedMs: 65_000 });
    const running = replay(agentStream().slice(0, 8), false);
    expect(glanceOf(running, Date.parse('2026-01-01T10:02:00.000Z'))).toEqual({ modelCalls: 1, toolCalls: 1, elapsedMs: 120_000 });
    expect(glanceOf(emptyRun())).toEqual({ modelCalls: 0, toolCalls: 0, elapsedMs: null });
    expect([850, 12_400, 187_000, 3_720_000].map(formatDuration)).toEqual(['850ms', '12.4s', '3m 07s', '1h 02m']);
  });
});
