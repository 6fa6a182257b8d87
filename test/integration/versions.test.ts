// The test of time, short (test/fixtures/versions-harness.ts; every build: test/e2e/versions.test.ts):
// a session and a goal started on today's build go on while a build whose workflow code changed
// their commands without a patch (test/fixtures/versions/build-3.ts — `keel check-replay` refuses
// it, test/integration/check-replay.test.ts) is deployed and made current. Pinned runs finish
// what they were doing on their own build; sessions and goals move at a quiet point by
// continuing as new; the old build's worker is stopped once nothing is pinned to it. Without
// versioning the same deploy fails the old runs' workflow tasks with nondeterminism errors. A
// session left idle moves too: the deploy step (`keel deploy current`) nudges it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundle } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';
import { testOfTime } from '../fixtures/versions-harness';

const here = path.dirname(fileURLToPath(import.meta.url));
const { env, workflowBundle } = useTemporal();

describe('sessions and goals across a deploy that changes workflow commands', () => {
  it('all finish on the new build: nothing lost, no nondeterminism, no command twice; the old build retired', async () => {
    const t0 = Date.now();
    const changed = await bundle(path.join(here, '../fixtures/versions/build-3.ts'));
    const result = await testOfTime(env, [
      { id: 'today', bundle: workflowBundle },
      { id: 'changed', bundle: changed },
    ], (line) => console.log(`versions: ${((Date.now() - t0) / 1000).toFixed(1)} s: ${line}`));
    expect(result.taskFailures).toEqual([]);
    if (result.retriedTasks.length > 0) console.log(`versions: tasks retried for an event that came in as they completed (UNHANDLED_COMMAND): ${result.retriedTasks.join('; ')}`);
    // Before the deploy, check-replay --from-server: the open session and goal replay with their build, not with the new one.
    expect(result.replayCheck).toEqual({ openRuns: 3, brokenWithFirst: 0, brokenWithNewest: 3 });
    expect(result.sessionOutcome).toBe('closed');
    expect(result.goalVerdict).toBe('goal_met');
    expect({ session: result.sessionBuild, goal: result.goalBuild }).toEqual({ session: 'changed', goal: 'changed' });
    expect(result.turns).toEqual(['hi', 'still here']);
    expect([...result.ledger].sort()).toEqual(['s1', 's2', 't1', 't2', 't3']);
    expect(result.retired[0]).toBe('today');
    // The idle session (no message after its first turn) moved to the new build by the deploy's nudge alone,
    // and its idle timeout of days kept its deadline across the move.
    expect(result.idleBuilds).toEqual(['today', 'changed']);
    expect(result.idleDeadlines).toHaveLength(2);
    expect(Math.abs(result.idleDeadlines[1]! - result.idleDeadlines[0]!)).toBeLessThan(5_000);
    // Pinned: no run's workflow tasks were completed by two builds.
    for (const run of result.runs) expect(run.builds, `${run.type} ${run.workflowId}`).toHaveLength(1);
    // The session and the goal each ran on both builds, one run after the other.
    for (const type of ['sessionWorkflow', 'goalWorkflow']) {
      expect(new Set(result.runs.filter((r) => r.type === type).flatMap((r) => r.builds))).toEqual(new Set(['today', 'changed']));
    }
  });
});
