// `keel check-replay`: the CI check before a deploy. A build whose workflow code changed a
// session's and a goal's commands without a patch (test/fixtures/versions/build-3.ts, a timer
// first in every run) is refused: exit 1, each saved history that breaks named with the event
// it breaks at. Today's build passes on the same histories (replay.test.ts replays them all).
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkReplay, historiesFromDirectory, replayReportLines, type ReplayReport } from '../../worker/check-replay';
import { keelReplayOptions } from '../../worker/worker';
import { keel } from '../fixtures/client-cli';
import { bundle, keelWorkflowBundleFile } from '../helpers/temporal';
import { tempDir } from '../fixtures/temp-dir';

const here = path.dirname(fileURLToPath(import.meta.url));
const histories = path.join(here, '../histories');
const fixture = (name: string) => path.join(here, '../fixtures/versions', `${name}.ts`);

/** A few saved histories of each kind, and the smoke fixture's (not a Keel workflow type). */
function someHistories(): string {
  const dir = tempDir('keel-check-replay-');
  for (const [folder, file] of [
    ['session', 'approvals.json'],
    ['session', 'continue-as-new-run-2.json'],
    ['goal', 'demo.json'],
    ['smoke', 'smoke-workflow.json'],
  ] as const) {
    mkdirSync(path.join(dir, folder), { recursive: true });
    copyFileSync(path.join(histories, folder, file), path.join(dir, folder, file));
  }
  return dir;
}

describe('keel check-replay', () => {
  it("refuses a build that changed a workflow's commands (exit 1, each broken history named with its event) and passes today's build", async () => {
    const dir = someHistories();
    const changed = await bundle(fixture('build-3'));
    const bundleFile = path.join(dir, 'build-3.js');
    writeFileSync(bundleFile, changed.code);
    // The compiled CLI (no tsx) against a prebuilt bundle, as CI runs `keel check-replay` after `npm run build`.
    const run = await keel(['check-replay', '--histories', dir, '--json'], { ...process.env, KEEL_WORKFLOW_BUNDLE: bundleFile, NO_COLOR: '1' });
    expect(run.code, run.stderr).toBe(1);
    const report = run.json<ReplayReport>();
    expect(report.skipped).toEqual([{ name: path.join('smoke', 'smoke-workflow.json'), workflowType: 'smokeWorkflow' }]);
    expect(report.broken).toBe(3);
    // Each breaks where its first run's first task now starts a timer: the SDK names that event.
    for (const c of report.checked) expect(c).toMatchObject({ outcome: 'breaks', nondeterminism: true, eventId: expect.any(Number) as number });
    const lines = replayReportLines(report);
    expect(lines).toContainEqual(expect.stringMatching(/^BREAKS session\/approvals\.json \(sessionWorkflow\) at event \d+: nondeterminism: \[TMPRL1100\] Nondeterminism error: /));
    expect(lines).toContainEqual(expect.stringMatching(/^BREAKS goal\/demo\.json \(goalWorkflow\) at event \d+: /));
    expect(lines.at(-1)).toBe('0 of 3 histories replay with this build, 3 break; 1 skipped (not a Keel workflow type: smokeWorkflow)');

    // Today's build (the run's bundle of workflows/): the same histories replay. The engine
    // in-process: a second `keel` start through tsx cost ~30 s of a loaded machine's CPU, and
    // the CLI's wiring (exit code, JSON) is the first case's.
    const today = await checkReplay(await keelReplayOptions(process.env, { codePath: await keelWorkflowBundleFile() }), historiesFromDirectory(dir));
    expect(today.checked.filter((c) => c.outcome !== 'replays')).toEqual([]);
    expect(replayReportLines(today).at(-1)).toBe('3 of 3 histories replay with this build; 1 skipped (not a Keel workflow type: smokeWorkflow)');
  });
});
