// Replays the histories saved from real runs (test/histories/) against today's workflow
// code: a change that would break running workflows fails here. Record new histories
// with KEEL_RECORD_HISTORIES=1 npm run test:integration.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { bundle } from '../helpers/temporal';
import { keelWorkflowSinks } from '../../worker/telemetry';

const here = path.dirname(fileURLToPath(import.meta.url));
const histories = path.join(here, '../histories');

/** Each folder of saved histories and the workflow code that must replay them (the smoke fixture imports none of Keel's preloaded modules). */
const suites = [
  { folder: 'smoke', workflowsPath: path.join(here, '../fixtures/smoke-workflow.ts'), preload: false },
  { folder: 'session', workflowsPath: path.join(here, '../../workflows/index.ts'), preload: true },
  { folder: 'goal', workflowsPath: path.join(here, '../../workflows/index.ts'), preload: true },
];

function load(folder: string): { file: string; history: unknown }[] {
  const dir = path.join(histories, folder);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => ({ file, history: JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as unknown }));
}

function recordedWorkflowId(history: unknown): string | undefined {
  const first = (history as { events?: { workflowExecutionStartedEventAttributes?: { workflowId?: string } }[] }).events?.[0];
  return first?.workflowExecutionStartedEventAttributes?.workflowId;
}

describe('replay of saved histories', () => {
  for (const suite of suites) {
    it(`replays every history in test/histories/${suite.folder}`, async () => {
      const saved = load(suite.folder);
      expect(saved.length).toBeGreaterThan(0);
      const workflowBundle = await bundle(suite.workflowsPath, { preload: suite.preload });
      // Workflows that derive ids from their workflow id (sessions do) replay under the recorded
      // one. One replay worker for the folder (a worker per history was most of this test's time);
      // distinct ids keep two files recorded from the same workflow apart in the results.
      const named = saved.map(({ file, history }) => ({ file, workflowId: recordedWorkflowId(history) ?? file, history }));
      const failures: string[] = [];
      let replayed = 0;
      const input = named.map(({ workflowId, history }) => ({ workflowId, history: history as never }));
      for await (const result of Worker.runReplayHistories({ workflowBundle, sinks: keelWorkflowSinks(null), replayName: `replay-${suite.folder}` }, input)) {
        replayed += 1;
        if (result.error) failures.push(`${named.filter((n) => n.workflowId === result.workflowId).map((n) => n.file).join(' or ')}: ${String(result.error)}`);
      }
      expect(failures).toEqual([]);
      expect(replayed).toBe(saved.length);
    });
  }

  it('fails when the workflow code changed incompatibly', async () => {
    const [{ file, history }] = load('smoke') as [{ file: string; history: unknown }];
    const workflowBundle = await bundle(path.join(here, '../fixtures/smoke-workflow-changed.ts'), { preload: false });
    await expect(Worker.runReplayHistory({ workflowBundle, sinks: keelWorkflowSinks(null) }, history, file)).rejects.toMatchObject({
      name: 'DeterminismViolationError',
    });
  });
});
