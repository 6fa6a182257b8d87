// keepAlive (activities/keep-alive.ts): an activity with no progress of its own heartbeats while
// it runs, so its heartbeat timeout finds an attempt lost with its worker; a local activity, which
// has no heartbeat (the SDK's core logged a warning for each one: "Activity heartbeat failed …
// UnknownActivity", 91 in one `npm test`), sends none. Beats every 10 ms here (1 s in the worker).
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { keepAlive } from '../../activities/keep-alive';

const EVERY_MS = 10;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function activity(isLocal: boolean) {
  const env = new MockActivityEnvironment({ isLocal });
  const beats = { count: 0 };
  env.on('heartbeat', () => beats.count++);
  return { env, beats };
}

describe('keepAlive', () => {
  it('heartbeats while the work runs, and stops when it ends', async () => {
    const { env, beats } = activity(false);
    const result = await env.run(() =>
      keepAlive(async () => {
        while (beats.count < 3) await pause(EVERY_MS);
        return 'answer';
      }, EVERY_MS),
    );
    expect(result).toBe('answer');
    const atEnd = beats.count;
    expect(atEnd).toBeGreaterThanOrEqual(3);
    await pause(10 * EVERY_MS);
    expect(beats.count).toBe(atEnd);
  });

  it('sends no heartbeat from a local activity, however long the work', async () => {
    const { env, beats } = activity(true);
    const result = await env.run(() =>
      keepAlive(async () => {
        await pause(10 * EVERY_MS);
        return 'answer';
      }, EVERY_MS),
    );
    expect(result).toBe('answer');
    expect(beats.count).toBe(0);
  });

  it('runs the work outside an activity', async () => {
    await expect(keepAlive(async () => 'direct', EVERY_MS)).resolves.toBe('direct');
  });
});
