import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeltaPublisher } from '../../activities/llm-deltas';
import { StreamPace } from '../../activities/stream-pace';
import type { ModelStreamEvent } from '../../shared/model-stream';

describe('StreamPace', () => {
  const pace = () => new StreamPace({ signalsPerSecond: 20, minIntervalMs: 150, maxIntervalMs: 2_000 });

  it('keeps the short pace for a few calls and shares the budget among many, up to the longest wait', () => {
    const shared = pace();
    expect(shared.intervalMs()).toBe(150);
    const leaves = Array.from({ length: 3 }, () => shared.join());
    // 3 calls × every 150 ms ≈ 20 a second: still within the budget.
    expect(shared.intervalMs()).toBe(150);
    leaves.push(...Array.from({ length: 7 }, () => shared.join()));
    // Ten calls share 20 signals a second: each every 500 ms.
    expect(shared.intervalMs()).toBe(500);
    leaves.push(...Array.from({ length: 30 }, () => shared.join()));
    // Forty: each every 2 s, the longest wait.
    expect(shared.intervalMs()).toBe(2_000);
    leaves.push(...Array.from({ length: 10 }, () => shared.join()));
    // Fifty would need 2.5 s each; the longest wait wins (25 a second).
    expect(shared.intervalMs()).toBe(2_000);
    for (const leave of leaves.splice(0, 45)) leave();
    // Five left: 250 ms each.
    expect(shared.intervalMs()).toBe(250);
    for (const leave of leaves) leave();
    expect(shared.intervalMs()).toBe(150);
  });

  it('counts a call that leaves twice (a finally after a cancel) once', () => {
    // 10 a second: one call every 100 ms, two every 200 ms.
    const shared = new StreamPace({ signalsPerSecond: 10, minIntervalMs: 50, maxIntervalMs: 2_000 });
    const leave = shared.join();
    shared.join();
    expect(shared.intervalMs()).toBe(200);
    leave();
    leave();
    expect(shared.intervalMs()).toBe(100);
  });

  it('refuses bounds that make no pace', () => {
    expect(() => new StreamPace({ signalsPerSecond: 0, minIntervalMs: 150, maxIntervalMs: 2_000 })).toThrow(RangeError);
    expect(() => new StreamPace({ signalsPerSecond: 20, minIntervalMs: 300, maxIntervalMs: 200 })).toThrow(RangeError);
  });
});

describe('DeltaPublisher under a shared pace', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends the first deltas as soon as ever, and later ones at the pace the worker has when it arms', () => {
    const sent: ModelStreamEvent[] = [];
    const shared = new StreamPace({ signalsPerSecond: 20, minIntervalMs: 150, maxIntervalMs: 2_000 });
    const others = Array.from({ length: 39 }, () => shared.join());
    const leave = shared.join();
    const publisher = new DeltaPublisher({ publish: (event) => sent.push(event) }, { callId: 'c', attempt: 1 }, () => shared.intervalMs());
    publisher.delta(0, 'text', 'Hel');
    // Forty calls stream (each every 2 s), but a watcher still sees text start within 25 ms.
    vi.advanceTimersByTime(25);
    expect(sent).toHaveLength(1);
    publisher.delta(0, 'text', 'lo');
    vi.advanceTimersByTime(1_999);
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(sent[1]).toMatchObject({ kind: 'delta', text: 'lo' });
    // The others end: the next wait is the short one again.
    for (const other of others) other();
    publisher.delta(0, 'text', '!');
    vi.advanceTimersByTime(150);
    expect(sent[2]).toMatchObject({ kind: 'delta', text: '!' });
    leave();
  });
});
