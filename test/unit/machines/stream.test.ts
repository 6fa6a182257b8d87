import { describe, expect, it } from 'vitest';
import { createStream, streamMachine, type StreamEvent, type StreamState } from '../../../machines/index';
import { accepted, kinds } from './helpers';

function run(state: StreamState, ...evs: StreamEvent[]) {
  let s = state;
  const directives = [];
  for (const ev of evs) {
    const r = accepted(streamMachine.transition(s, ev));
    s = r.state;
    directives.push(...r.directives);
  }
  return { state: s, directives };
}

describe('stream machine', () => {
  it('connects, streams, counts bytes and completes', () => {
    const { state, directives } = run(createStream(), { type: 'connect' }, { type: 'connected' }, { type: 'start_streaming' }, { type: 'data', bytes: 120 }, { type: 'data', bytes: 30 });
    expect(state).toMatchObject({ status: 'streaming', attempt: 1, bytes: 150, totalBytes: 150 });
    expect(kinds(directives)).toEqual(['stream.connecting', 'stream.connected', 'stream.streaming']);
    const done = run(state, { type: 'complete' });
    expect(done.state).toMatchObject({ status: 'completed', totalBytes: 150 });
    expect(streamMachine.isTerminal(done.state)).toBe(true);
    expect(streamMachine.transition(done.state, { type: 'disconnect' }).ok).toBe(false);
  });

  it('reconnects after a failure with the next attempt, and gives up when attempts are spent', () => {
    let { state } = run(createStream(2), { type: 'connect' }, { type: 'connected' }, { type: 'start_streaming' }, { type: 'data', bytes: 10 }, { type: 'error', message: 'socket hang up' });
    expect(state).toMatchObject({ status: 'failed', attempts: 1, error: 'socket hang up', totalBytes: 10 });
    state = run(state, { type: 'reconnect' }).state;
    expect(state).toMatchObject({ status: 'connecting', attempt: 2 });
    state = run(state, { type: 'error', message: 'ECONNRESET' }).state;
    const r = streamMachine.transition(state, { type: 'reconnect' });
    expect(r).toMatchObject({ ok: false, error: { code: 'guard_failed' } });
    expect(r.ok || r.error.message).toMatch(/all 2 connection attempts are spent/);
  });
});
