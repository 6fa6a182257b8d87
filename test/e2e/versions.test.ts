// The test of time in full (`npm run test:e2e -- versions`): a session and a goal started on
// today's build keep going across three later builds, each deployed as its own versioned worker
// and made current while they are mid-turn, waiting for an approval, idle or mid-task:
//   build-2  other code, the same commands (test/fixtures/versions/build-2.ts)
//   build-3  the session's and the goal's commands changed without a patch (build-3.ts;
//            `keel check-replay` refuses it against the saved histories)
//   build-4  other code again (build-4.ts)
// Every run stays on its build; sessions and goals move at quiet points by continuing as new
// (an idle session, nudged by each deploy, moves at once; its 3-day idle timeout carries over);
// the last build is ramped (100 %, 0 %), made current, rolled back and rolled forward;
// each older build's worker is stopped once no open run needs it. The short version with two
// builds is test/integration/versions.test.ts (npm test).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundle } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';
import { testOfTime } from '../fixtures/versions-harness';

const here = path.dirname(fileURLToPath(import.meta.url));
const { env, workflowBundle } = useTemporal();
const fixture = (name: string) => path.join(here, '../fixtures/versions', `${name}.ts`);

describe('a session and a goal across three later builds', () => {
  it('all finish on the newest build: 0 lost, 0 nondeterminism, no command twice; every older build retired on the way', async () => {
    const builds = [
      { id: 'build-1', bundle: workflowBundle },
      { id: 'build-2', bundle: await bundle(fixture('build-2')) },
      { id: 'build-3', bundle: await bundle(fixture('build-3')) },
      { id: 'build-4', bundle: await bundle(fixture('build-4')) },
    ];
    const started = Date.now();
    const result = await testOfTime(env, builds, (line) => console.log(`versions: ${line}`), { rampAndRollback: true });
    console.log(`versions: ${result.runs.length} runs, ${Date.now() - started} ms; retired ${result.retired.join(', ')}`);
    for (const run of result.runs) console.log(`versions: ${run.type} ${run.workflowId}: ${run.builds.join(', ')}`);
    expect(result.taskFailures).toEqual([]);
    if (result.retriedTasks.length > 0) console.log(`versions: tasks retried for an event that came in as they completed (UNHANDLED_COMMAND): ${result.retriedTasks.join('; ')}`);
    // Before the deploy, check-replay --from-server: the open session and goal replay with their build, not with the new one.
    expect(result.replayCheck).toEqual({ openRuns: 3, brokenWithFirst: 0, brokenWithNewest: 3 });
    expect(result.sessionOutcome).toBe('closed');
    expect(result.goalVerdict).toBe('goal_met');
    expect({ session: result.sessionBuild, goal: result.goalBuild }).toEqual({ session: 'build-4', goal: 'build-4' });
    expect(result.turns).toEqual(['hi', 'still here']);
    expect([...result.ledger].sort()).toEqual(['s1', 's2', 't1', 't2', 't3']);
    expect(result.retired.slice(0, 3)).toEqual(['build-1', 'build-2', 'build-3']);
    // The idle session (one turn, then nothing for the rest of the run, with an idle timeout of 3 days)
    // followed every deploy by the nudge alone — back to build-3 on the rollback and forward again —
    // and every run armed the same idle deadline, days ahead.
    expect(result.idleBuilds).toEqual(['build-1', 'build-2', 'build-3', 'build-4', 'build-3', 'build-4']);
    for (const d of result.idleDeadlines) expect(Math.abs(d - result.idleDeadlines[0]!)).toBeLessThan(5_000);
    expect(result.idleDeadlines).toHaveLength(6);
    // The ramp: at 100 % a new session started on build-4, at 0 % on build-3 (then current).
    expect(result.ramp).toEqual({ at100: 'build-4', at0: 'build-3', rolledBackTo: 'build-3', rolledForwardTo: 'build-4' });
    for (const run of result.runs) expect(run.builds, `${run.type} ${run.workflowId}`).toHaveLength(1);
    // The session saw every build (it moved at each quiet point); the goal at least the first and the last.
    const seen = (type: string) => new Set(result.runs.filter((r) => r.type === type).flatMap((r) => r.builds));
    expect(seen('sessionWorkflow')).toEqual(new Set(['build-1', 'build-2', 'build-3', 'build-4']));
    expect(seen('goalWorkflow')).toContain('build-1');
    expect(seen('goalWorkflow')).toContain('build-4');
  });
});
