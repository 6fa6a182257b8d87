// A planner call that fails mid-stream was billed for what the API had started: that usage
// reaches the goal's usage (and budget), and the failed call is tried again.
import { describe, expect, it } from 'vitest';
import { cancelSignal, goalUsageQuery } from '../../workflows/definitions';
import { goalEnv, plan, planner, task } from '../fixtures/goal-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const billed = (input: number, output: number) => ({ input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });

describe('goal usage', () => {
  it("counts a failed planner call's billed tokens, then plans on the next round", async () => {
    const proposal = plan([task('greet', 'Write the greeting', 'Create hello.txt containing "hello".')]);
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        // The first planner request breaks off after message_start (billed: 100 in, 20 out so far).
        { match: planner(), times: 1, reply: { ...proposal, usage: billed(100, 20) }, fault: { kind: 'stream_error', afterEvents: 4, errorType: 'overloaded_error' } },
        { match: planner(), reply: { ...proposal, usage: billed(1000, 50) } },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Greet the world in hello.txt' });
      await run.waitForState((s) => s.status === 'awaiting_plan_approval', 60_000);
      expect(g.standin.requests).toHaveLength(2);
      const usage = await run.handle.query(goalUsageQuery);
      // Both calls: the failed one's 100 input tokens are not lost.
      expect(usage.usage.inputTokens).toBe(1100);
      expect(usage.usage.outputTokens).toBeGreaterThanOrEqual(50);
      await run.handle.signal(cancelSignal, { reason: 'test over' });
    });
  });
});
