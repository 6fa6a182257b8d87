// Every billed call is priced, or the run is refused before it makes one: a model without a
// price stops a session or a goal at start with one line; a price from KEEL_MODEL_PRICES
// lets it run; an alias the API answers with a dated snapshot id is priced as the model asked for.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { costOf } from '../../activities/llm-pricing';
import { usageQuery, userMessageUpdate } from '../../workflows/definitions';
import { goalEnv, plan, planner, task } from '../fixtures/goal-harness';
import { say, sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const UNPRICED = 'claude-unreleased-9';
const answer = { rules: [{ match: {}, reply: say('Priced.', { usage: { input_tokens: 1_000, output_tokens: 100 } }) }], models: [UNPRICED] };

describe('model prices', () => {
  it('refuses a session on a model without a price at start, before any call, with one line', async () => {
    const s = await sessionEnv(env, workflowBundle, answer);
    await s.run(async () => {
      const run = await s.start({ model: UNPRICED, limits: { costUsd: 0.01 } });
      const failed = await run.waitForState((v) => v.status === 'failed');
      expect((await run.log()).find((e) => e.kind === 'session.failed')).toMatchObject({
        error: `no price for model ${UNPRICED}: add it to the price table or KEEL_MODEL_PRICES`,
      });
      expect(failed.status).toBe('failed');
      expect(s.standin.requests).toHaveLength(0);
    });
  });

  it('runs that model once KEEL_MODEL_PRICES gives it a price, and counts its cost', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'keel-prices-'));
    const file = path.join(dir, 'prices.yaml');
    await writeFile(file, `${UNPRICED}: { input: 2, output: 8 }\n`);
    try {
      const s = await sessionEnv(env, workflowBundle, answer, { KEEL_MODEL_PRICES: file });
      await s.run(async () => {
        const run = await s.start({ model: UNPRICED });
        await run.handle.executeUpdate(userMessageUpdate, { args: ['hello'] });
        await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
        const { usage } = await run.handle.query(usageQuery);
        expect(usage.unpricedCalls).toBe(0);
        // Billed at the given price, as the stand-in billed the request (its cache writes included).
        const billed = s.standin.requests.map((r) => costOf(UNPRICED, r.usage!, { [UNPRICED]: { input: 2, output: 8 } })!.total).reduce((a, b) => a + b, 0);
        expect(billed).toBeGreaterThan(0);
        expect(usage.costUsd).toBeCloseTo(billed, 9);
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('prices an alias the API answers with a dated snapshot id (claude-sonnet-4-0 → claude-sonnet-4-20250514)', async () => {
    const s = await sessionEnv(env, workflowBundle, answer);
    await s.run(async () => {
      const run = await s.start({ model: 'claude-sonnet-4-0' });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['hello'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      const { usage } = await run.handle.query(usageQuery);
      expect(usage.unpricedCalls).toBe(0);
      expect(usage.costUsd).toBeGreaterThan(0);
      expect(s.standin.requests.map((r) => r.body)).toContainEqual(expect.objectContaining({ model: 'claude-sonnet-4-0' }));
    });
  });

  it('refuses a goal on a model without a price at start', async () => {
    const g = await goalEnv(env, workflowBundle, answer);
    await g.run(async () => {
      const run = await g.start({ goal: 'anything', model: UNPRICED });
      const result = await run.handle.result();
      expect(JSON.stringify(result)).toContain(`cannot start: no price for model ${UNPRICED}: add it to the price table or KEEL_MODEL_PRICES`);
      expect(g.standin.requests).toHaveLength(0);
    });
  });

  it('plans on a model that refuses a forced tool (thinking always on): the planner asks for its tool instead of forcing it', async () => {
    const g = await goalEnv(env, workflowBundle, { rules: [{ match: planner(), reply: plan([task('a', 'A', 'do a')]) }] });
    await g.run(async () => {
      const run = await g.start({ goal: 'anything', model: 'claude-fable-5-1' });
      await run.waitForState((v) => v.status === 'awaiting_plan_approval');
      const sent = g.standin.requests[0]!.body as { tool_choice?: unknown; system?: unknown };
      expect(sent.tool_choice).toEqual({ type: 'auto' });
      expect(JSON.stringify(sent.system)).toContain('Answer only by calling the submit_plan tool');
    });
  });
});
