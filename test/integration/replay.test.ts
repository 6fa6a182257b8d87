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
import type { TelemetryEvent } from '../../workflows/telemetry-sink';

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

  // The activation that delivers a local activity's result reads a clock that is not the same in
  // every execution of a run: sdk-core sets it from the marker's complete_time when it sees the
  // marker ahead, else from the next task's start — a replay read a quick read's result ~60 ms
  // later than the run that recorded it (sse-resume.test.ts, twice). Here each quick read's
  // recorded complete_time is moved to 1 ms before the next task's start (the latest that
  // clock can read): the results' times stay as recorded (machines/tool-result.ts
  // localResultTime: sent at + the worker's ran_ms). Stamped with that clock instead, as before
  // cd115bb, they moved by the 33-63 ms the shift adds here, and this failed.
  it("a local call's result reads the same time in a replay whose clock after it differs", async () => {
    type Event = { eventType: string; eventTime: string; markerRecordedEventAttributes?: { details: Record<string, { payloads: { data: string }[] }> } };
    const history = JSON.parse(readFileSync(path.join(histories, 'session', 'local-read-stamped.json'), 'utf8')) as { events: Event[] };
    const shifted = structuredClone(history);
    let moved = 0;
    shifted.events.forEach((event, i) => {
      const marker = event.markerRecordedEventAttributes?.details.data?.payloads[0];
      if (marker === undefined) return;
      const data = JSON.parse(Buffer.from(marker.data, 'base64').toString('utf8')) as { activity_type: string; complete_time: { seconds: number; nanos: number } };
      if (data.activity_type !== 'runTool') return;
      const next = shifted.events.slice(i).find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_STARTED')!;
      const ms = Date.parse(next.eventTime) - 1;
      const recorded = data.complete_time.seconds * 1000 + Math.floor(data.complete_time.nanos / 1e6);
      expect(ms - recorded).toBeGreaterThan(5);
      data.complete_time = { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
      marker.data = Buffer.from(JSON.stringify(data)).toString('base64');
      moved++;
    });
    expect(moved).toBe(4);
    const workflowBundle = await bundle(path.join(here, '../../workflows/index.ts'));
    const replayed = async (h: unknown): Promise<TelemetryEvent[]> => {
      const seen: TelemetryEvent[] = [];
      const sinks = { ...keelWorkflowSinks(null), keelTelemetry: { events: { callDuringReplay: true, fn: (_info: unknown, events: TelemetryEvent[]) => void seen.push(...events) } } };
      await Worker.runReplayHistory({ workflowBundle, sinks }, h, recordedWorkflowId(h));
      return seen;
    };
    const [asRecorded, withLaterClock] = [await replayed(history), await replayed(shifted)];
    expect(asRecorded.map((e) => e.kind)).toEqual(withLaterClock.map((e) => e.kind));
    expect(asRecorded.filter((e) => e.kind === 'tool.result')).toHaveLength(6);
    expect(withLaterClock).toEqual(asRecorded);
  });

  it('fails when the workflow code changed incompatibly', async () => {
    const [{ file, history }] = load('smoke') as [{ file: string; history: unknown }];
    const workflowBundle = await bundle(path.join(here, '../fixtures/smoke-workflow-changed.ts'), { preload: false });
    await expect(Worker.runReplayHistory({ workflowBundle, sinks: keelWorkflowSinks(null) }, history, file)).rejects.toMatchObject({
      name: 'DeterminismViolationError',
    });
  });
});
