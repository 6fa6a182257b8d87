// The streaming activity of bench/delta-channel.ts: `count` deltas, one every `intervalMs`,
// each carrying its number and the time it was sent. "heartbeat": the text so far rides on
// the activity's heartbeat details (persisted on the server, no history event, read by
// DescribeWorkflowExecution). "signal": each delta is a signal to the workflow (an event and
// a workflow task each, as Keel's model activity does today).
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';

export function createActivities(client: Client) {
  return {
    async streamDeltas(mode: 'heartbeat' | 'signal', count: number, intervalMs: number): Promise<void> {
      const ctx = Context.current();
      let text = '';
      for (let seq = 1; seq <= count; seq += 1) {
        text += `delta ${seq} of a model's answer. `;
        const at = Date.now();
        if (mode === 'heartbeat') ctx.heartbeat({ seq, at, text });
        else await client.workflow.getHandle(ctx.info.workflowExecution!.workflowId).signal('delta', { seq, at });
        await sleep(intervalMs);
      }
    },
  };
}
