// The probe workflow of bench/delta-channel.ts: runs one streaming activity and takes the
// deltas it signals (the "signal" channel), doing nothing else with them.
import { defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { createActivities } from './activities';

export const deltaSignal = defineSignal<[{ seq: number; at: number }]>('delta');

const { streamDeltas } = proxyActivities<ReturnType<typeof createActivities>>({ startToCloseTimeout: '5 minutes', heartbeatTimeout: '30 seconds' });

export async function deltaProbe(mode: 'heartbeat' | 'signal', count: number, intervalMs: number): Promise<number> {
  let received = 0;
  setHandler(deltaSignal, () => {
    received += 1;
  });
  await streamDeltas(mode, count, intervalMs);
  return received;
}
