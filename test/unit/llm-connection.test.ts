// The model activity's connection state is the stream machine's state (machines/stream.ts).
import { describe, expect, it } from 'vitest';
import { ConnectionProgress } from '../../activities/llm-connection';
import { streamMachine } from '../../machines/stream';

describe('ConnectionProgress', () => {
  it('walks the stream machine: connecting, connected, streaming with bytes, completed', () => {
    const p = new ConnectionProgress(2);
    expect(p.details()).toEqual({ stream: { status: 'disconnected', attempts: 0, maxAttempts: 1, totalBytes: 0 }, bytesOutsideStream: 0, events: 0, attempt: 2, requestId: null });
    p.received(40); // a compaction's summary call, before the stream
    p.connecting();
    expect(p.details().stream).toEqual({ status: 'connecting', attempt: 1, maxAttempts: 1, totalBytes: 0 });
    p.connected('req_1');
    expect(p.details()).toMatchObject({ stream: { status: 'connected', attempt: 1 }, requestId: 'req_1' });
    p.received(100);
    p.event();
    p.received(20);
    expect(p.details()).toMatchObject({ stream: { status: 'streaming', attempt: 1, bytes: 120, totalBytes: 120 }, bytesOutsideStream: 40, events: 1 });
    p.completed();
    expect(p.details().stream).toEqual({ status: 'completed', attempts: 1, maxAttempts: 1, totalBytes: 120 });
    // Whatever it reports parses as the machine's state.
    expect(streamMachine.fromJSON(p.details().stream)).toEqual(p.details().stream);
    expect(p.refused).toBe(0);
  });

  it('a failure after connecting is the machine’s failed state; one before it leaves the connection disconnected', () => {
    const early = new ConnectionProgress(1);
    early.failed('ModelInvalidInput');
    expect(early.details().stream.status).toBe('disconnected');
    const late = new ConnectionProgress(1);
    late.connecting();
    late.connected(null);
    late.received(5);
    late.failed('APIConnectionError');
    expect(late.details().stream).toEqual({ status: 'failed', attempts: 1, maxAttempts: 1, totalBytes: 5, error: 'APIConnectionError' });
    late.received(3); // a straggler after the failure is not stream data
    expect(late.details()).toMatchObject({ stream: { totalBytes: 5 }, bytesOutsideStream: 3 });
  });

  it('an answer that completes before any counted byte still passes through streaming', () => {
    const p = new ConnectionProgress(1);
    p.connecting();
    p.connected(null);
    p.completed();
    expect(p.details().stream).toMatchObject({ status: 'completed', attempts: 1 });
    expect(p.refused).toBe(0);
  });
});
