// A local call's result is stamped from its own history (the time it was sent plus the run
// time its worker measured), not from the clock of the activation that delivers it: that clock
// is not the same in every execution of a run, and a reader resuming the stream saw the
// event's time change under it (sse-resume.test.ts). The run time comes from a worker: a
// value that is not a time is not believed.
import { describe, expect, it } from 'vitest';
import { localResultTime } from '../../../machines/tool-result';

const sentAt = Date.parse('2026-11-30T13:06:51.280Z');

describe('localResultTime', () => {
  it('is the time the call was sent plus its own run time, whatever the clock says when the result arrives', () => {
    expect(new Date(localResultTime(sentAt, { ran_ms: 5 })!).toISOString()).toBe('2026-11-30T13:06:51.285Z');
    expect(localResultTime(sentAt, { ran_ms: 0 })).toBe(sentAt);
    expect(localResultTime(sentAt, { ran_ms: 4.6 })).toBe(sentAt + 5);
  });

  it('is null for a result without a run time (a worker from before it): the run keeps the clock it recorded', () => {
    expect(localResultTime(sentAt, {})).toBeNull();
  });

  it('does not believe a run time that is not one', () => {
    for (const ran_ms of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number, null as unknown as number]) {
      expect(localResultTime(sentAt, { ran_ms })).toBeNull();
    }
    // A huge one is cut to what no local call could exceed: the time stays a valid date.
    const at = localResultTime(sentAt, { ran_ms: 1e300 })!;
    expect(() => new Date(at).toISOString()).not.toThrow();
    expect(at - sentAt).toBe(10 * 60_000);
  });
});
