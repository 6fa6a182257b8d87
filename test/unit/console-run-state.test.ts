// The console's view of a run's stream (server/console/src/run-state.ts): an interrupted reply
// stops showing as "being written", also when the stream is read again from its start (a
// reload) and a delta the cancelled call sent lands after the turn's interrupt.
import { describe, expect, it } from 'vitest';
import { applyRunItem, emptyRun, endRun, modelTrouble, type ModelCall, type StreamItem } from '../../server/console/src/run-state';

let offset = 0;
const model = (kind: string, extra: Record<string, unknown> = {}): StreamItem => ({ topic: 'model', offset: offset++, data: { kind, callId: 'call-1', attempt: 1, ...extra } });
const event = (kind: string): StreamItem => ({ topic: 'events', offset: offset++, data: { kind, seq: offset } });

function replay(items: StreamItem[]) {
  const run = emptyRun();
  const byKey = new Map<string, ModelCall>();
  for (const item of items) applyRunItem(run, byKey, item);
  return run;
}

describe('console run state', () => {
  it('an interrupt ends the reply even when a late delta of the cancelled call follows it', () => {
    const run = replay([
      event('turn.started'),
      model('start', { model: 'claude-sonnet-4-6' }),
      model('delta', { block: 'text', text: 'Writing a long ' }),
      event('turn.interrupted'),
      model('delta', { block: 'text', text: 'answer' }),
    ]);
    expect(run.live).toBeNull();
    expect(run.calls.map((c) => [c.state, c.text])).toEqual([['cut', 'Writing a long answer']]);
  });

  it('a refused or truncated turn ends its call; a new call after it streams again', () => {
    for (const end of ['turn.refused', 'turn.truncated']) {
      const run = replay([model('start'), model('delta', { block: 'text', text: 'x' }), event(end)]);
      expect(run.live, end).toBeNull();
      expect(run.calls[0]!.state, end).toBe('done');
    }
    const next = replay([model('start'), event('turn.interrupted'), { topic: 'model', offset: offset++, data: { kind: 'start', callId: 'call-2', attempt: 1 } }, { topic: 'model', offset: offset++, data: { kind: 'delta', callId: 'call-2', attempt: 1, block: 'text', text: 'new' } }]);
    expect(next.live?.callId).toBe('call-2');
    expect(next.live?.state).toBe('streaming');
  });

  it('a stop ends the call, and the end of the run ends any call still streaming', () => {
    const stopped = replay([model('start'), model('delta', { block: 'text', text: 'done' }), model('stop')]);
    expect(stopped.live).toBeNull();
    expect(stopped.calls[0]!.state).toBe('done');
    const open = replay([model('start'), model('delta', { block: 'text', text: 'half' })]);
    expect(open.live?.state).toBe('streaming');
    endRun(open);
    expect([open.live, open.ended, open.calls[0]!.state]).toEqual([null, true, 'done']);
  });
});

describe('modelTrouble (the session badge)', () => {
  const log = (...kinds: Array<[string, Record<string, unknown>?]>) => kinds.map(([kind, extra], seq) => ({ kind, seq, ...extra }));
  it('says the model failed when the newest turn ended in turn.error, with its message', () => {
    expect(modelTrouble(log(['turn.started'], ['turn.error', { message: "ANTHROPIC_API_KEY is not set in the worker's environment." }]))).toEqual({ state: 'failed', message: "ANTHROPIC_API_KEY is not set in the worker's environment." });
  });
  it('says the call is retried while a retry waits, and nothing once a later turn went well', () => {
    expect(modelTrouble(log(['turn.started'], ['turn.retry_scheduled', { error: 'The API could not be reached' }]))).toEqual({ state: 'retrying', message: 'The API could not be reached' });
    expect(modelTrouble(log(['turn.started'], ['turn.error', { message: 'x' }], ['turn.started'], ['turn.completed']))).toBeNull();
    expect(modelTrouble(log(['turn.started'], ['turn.error', { message: 'x' }], ['turn.started']))).toBeNull();
    expect(modelTrouble([])).toBeNull();
  });
});
