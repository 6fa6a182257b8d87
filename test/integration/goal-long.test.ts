// A goal of many tasks that continues as new every 50 events of history ends with the same
// report as the same goal in one run, and no run's history reaches 10,000 events. `npm test`
// runs 24 tasks; `npm run test:goal-long` runs the 300 of the issue ([4/7]).
import type { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { metricsQuery } from '../../workflows/definitions';
import type { GoalResult } from '../../workflows/goal';
import { critic, finish, goalEnv, plan, planner, recordGoalHistory, review, task, type GoalRun } from '../fixtures/goal-harness';
import { useTemporal } from '../fixtures/use-temporal';

const TASKS = Number(process.env.KEEL_GOAL_LONG_TASKS ?? 24);
const HISTORY_LIMIT = 10_000;
/** Both goals send the same prompts to one stand-in: without this the second would read the first's simulated prompt cache and pay less. */
const NO_CACHE = { cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

const { env, workflowBundle } = useTemporal();

/** Every run of a workflow id, newest first, with its history's length (each run names the one it continued). */
async function runs(workflowId: string): Promise<{ runId: string; events: number }[]> {
  const found: { runId: string; events: number }[] = [];
  let runId: string | undefined = (await env.client.workflow.getHandle(workflowId).describe()).runId;
  for (;;) {
    const history: temporal.api.history.v1.IHistory = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    found.push({ runId: runId, events: events.length });
    const previous: string | null | undefined = started?.continuedExecutionRunId;
    if (!previous) return found;
    runId = previous;
  }
}

/** The report with the goal's own id taken out (agent ids carry it). */
const comparable = (result: GoalResult) => JSON.parse(JSON.stringify({ ...result, goalId: null, runs: null }).replaceAll(result.goalId, '<goal>')) as unknown;

describe('long goals', () => {
  it(`a goal of ${TASKS} tasks continuing as new every 50 events reports what it reports in one run; every run's history stays under ${HISTORY_LIMIT} events`, { timeout: Math.max(120_000, TASKS * 2_000) }, async () => {
    const tasks = Array.from({ length: TASKS }, (_, i) => task(`t${i + 1}`, `Task ${i + 1}`, `Say that task ${i + 1} is done.`));
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: { ...plan(tasks), usage: NO_CACHE } },
        { match: { systemContains: 'task [' }, reply: { ...finish('Done.'), usage: NO_CACHE } },
        { match: critic(), reply: { ...review('pass', `All ${TASKS} tasks are done.`), usage: NO_CACHE } },
      ],
    });
    await g.run(async () => {
      const common = { goal: `Do ${TASKS} small things`, autoApprove: true, maxTasks: TASKS, maxConcurrency: 4 };
      const [whole, split]: GoalRun[] = await Promise.all([
        g.start({ ...common, continueAsNewWhenSuggested: false }),
        g.start({ ...common, continueAsNewAfterEvents: 50 }),
      ]);
      const [one, many] = await Promise.all([whole!.handle.result(), split!.handle.result()]);
      expect(one.verdict).toBe('goal_met');
      expect(one.tasks.filter((t) => t.status === 'succeeded')).toHaveLength(TASKS);
      expect(one.runs).toBe(1);
      // Forced every 50 events: many runs, each handing over at a quiet point.
      expect(many.runs).toBeGreaterThan(TASKS / 10);
      expect(comparable(many)).toEqual(comparable(one));

      const chain = await runs(split!.handle.workflowId);
      expect(chain).toHaveLength(many.runs);
      // The first two runs of the hand-over, for the replay test (with KEEL_RECORD_HISTORIES=1).
      const [first, second] = chain.slice(-2).reverse();
      if (TASKS <= 24 && first && second) {
        await recordGoalHistory(env.client.workflow.getHandle(split!.handle.workflowId, first.runId), 'continue-as-new-run-1');
        await recordGoalHistory(env.client.workflow.getHandle(split!.handle.workflowId, second.runId), 'continue-as-new-run-2');
      }
      for (const r of [...chain, ...(await runs(whole!.handle.workflowId))]) expect(r.events).toBeLessThan(HISTORY_LIMIT);
      // Counters are carried across the runs: every task finished once, in whichever run.
      const metrics = await split!.handle.query(metricsQuery);
      const finished = Object.entries(metrics.machines.autonomy!.transitions).filter(([k]) => k.includes('--task_finished-->'));
      expect(finished.reduce((n, [, c]) => n + c, 0)).toBe(TASKS);
      console.log(`goal-long: ${TASKS} tasks; one run: ${(await runs(whole!.handle.workflowId))[0]!.events} events; forced: ${many.runs} runs, the longest ${Math.max(...chain.map((r) => r.events))} events`);
    });
  });
});
