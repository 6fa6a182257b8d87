// The short version of `npm run fleet` (bench/fleet/run.ts): two worker processes on their
// own workspace roots (KEEL_WORKSPACE_HOST), one PostgreSQL store, the Temporal dev server on
// a database file of its own (killed -9 and restarted here, so not the run's shared server),
// the stand-in and `keel serve`; 10 goals and 4 sessions whose commands are approved through
// the SDK, the HTTP API and `temporal workflow signal`, while one of each fault strikes in a
// 20 s window: a worker kill -9, a worker away for 6 s, a Temporal server kill -9, PostgreSQL
// stopped 3 s and restarted in 1 s. (The window was 30 s, the worker away 10 s and PostgreSQL
// stopped 5 s: the same faults, closer together; the run's CPU is its processes starting, not
// its goals, and the window and the waits after it were most of its 61 s.) Every goal met,
// every turn answered, 0 lost, 0 run twice, 0 stuck, 0 needing a human. A FIXED seed
// (KEEL_FLEET_SEED replays another). It waits on what Keel answers, never on the clock: the
// horizon (8 minutes after the faults) is far beyond what a busy machine needs.
import { describe, expect, it, onTestFinished } from 'vitest';
import { runFleet } from '../../bench/fleet/run';
import { fleetMarkdown } from '../../bench/fleet/report';
import { compiledCli } from '../fixtures/compiled-cli';
import { keelWorkflowBundleFile } from '../helpers/temporal';

describe('fleet (short)', () => {
  it('two workers, 10 goals, 4 sessions through one of each fault: all met and answered, 0 lost, 0 twice, 0 stuck', async () => {
    const seed = Number(process.env.KEEL_FLEET_SEED ?? 45);
    const stop = new AbortController();
    onTestFinished(() => stop.abort(new Error('the test ended')));
    const lines: string[] = [];
    const options = {
      workers: 2,
      goals: 10,
      sessions: 4,
      turns: 2,
      seed,
      windowMs: 20_000,
      killEveryMs: 10_000,
      restartDelayMs: [1_000, 2_000] as [number, number],
      awayMs: 6_000,
      serverRestarts: 1,
      pgStopMs: 3_000,
      pgBlipMs: 1_000,
      quietMs: 8 * 60_000,
    };
    const result = await runFleet({ ...options, cli: await compiledCli(), bundleFile: await keelWorkflowBundleFile(), log: (l) => lines.push(l), signal: stop.signal });
    const report = fleetMarkdown(`KEEL_FLEET_SEED=${seed} vitest run test/integration/fleet.test.ts`, options, result, new Date().toISOString());
    console.log(report);
    const kinds = new Set(result.faults.filter((f) => f.struckMs !== null).map((f) => f.kind));
    expect([...kinds].sort(), lines.join('\n')).toEqual(['pg-restart', 'pg-stop', 'server-restart', 'worker-away', 'worker-kill']);
    expect(
      {
        met: result.goals.met,
        stopped: result.goals.stopped,
        failed: [...result.goals.failed, ...result.sessions.failed],
        stuck: [...result.goals.stuck, ...result.sessions.stuck],
        needsHuman: [...result.goals.needsHuman, ...result.sessions.needsHuman],
        answered: result.sessions.turnsAnswered,
        lost: result.messages.lost,
        twice: result.sideEffects.twice,
        missing: result.sideEffects.missing,
        calls: result.sideEffects.toolCallsWithoutOneResult,
      },
      `${report}\n${lines.join('\n')}`,
    ).toEqual({ met: options.goals, stopped: [], failed: [], stuck: [], needsHuman: [], answered: options.sessions * options.turns, lost: [], twice: [], missing: [], calls: [] });
    // Every approval channel answered at least one call, and every fault was recovered from.
    expect(Math.min(result.approvals.sdk, result.approvals.http, result.approvals.signal)).toBeGreaterThan(0);
    expect(result.faults.filter((f) => f.struckMs !== null && f.recoveredMs === null)).toEqual([]);
    expect(result.pass, result.failedChecks.join('\n')).toBe(true);
  }, 15 * 60_000);
});
