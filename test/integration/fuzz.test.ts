// The short version of `npm run fuzz` (test/chaos/fuzz.ts): 300 random signals, updates
// and start inputs against running sessions and goals, on the run's dev server.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowsPath } from '../../worker/worker';
import { runFuzz } from '../chaos/fuzz';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});

afterAll(async () => {
  await env?.close();
});

describe('fuzz (short)', () => {
  it('300 random messages: no workflow task fails, every workflow answers, a turn and a goal complete afterwards', async () => {
    const seed = Number(process.env.KEEL_FUZZ_SEED ?? Date.now() % 100_000);
    const result = await runFuzz({ client: env.client, connection: env.nativeConnection, namespace: env.namespace, messages: 300, seed, sessions: 3, goals: 2, workflowBundle });
    expect({ seed, unexpected: result.unexpected, workflowTaskFailures: result.workflowTaskFailures }).toEqual({ seed, unexpected: [], workflowTaskFailures: 0 });
    expect(result.queriesAnswered).toBe(5);
    expect(result.normalTurnCompleted).toBe(true);
    expect(result.normalGoalCompleted).toBe(true);
  }, 180_000);
});
