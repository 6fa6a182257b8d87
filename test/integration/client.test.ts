// The client SDK against the real dev server: a goal driven end to end through GoalHandle
// (plan approval, tool approvals answered from its event stream, resumable events, queries,
// the report), a session through SessionHandle (send, approvals, interrupt, steer, pause,
// answer, close), list() by search attributes, and refusals as UpdateRejectedError.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KeelClient, NotFoundError, UpdateRejectedError, type GoalStreamItem } from '../../client/index';
import { loadScenario } from '../../standin/scenario';
import { goalEnv, waitUntil } from '../fixtures/goal-harness';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const demoScenario = path.join(here, '../../client/demo/goal-demo.yaml');
const sessionScenario = path.join(here, '../fixtures/scenarios/session-demo.yaml');

const { env, workflowBundle } = useTemporal();

describe('KeelClient: goals', () => {
  it('starts a goal idempotently, approves its plan and tool calls, follows and resumes its events, and returns the report', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(demoScenario), 'sk-ant-demo');
    await g.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      const id = `client-goal-${g.taskQueue.slice(-8)}`;
      const goal = await keel.startGoal('A slugify module with passing tests and a README', { id, workspace: g.workspace, modelActivity: { retry: { maximumAttempts: 2 } } });
      // A retried start with the same id is the same goal, not a second one.
      const again = await keel.startGoal('A slugify module with passing tests and a README', { id, workspace: g.workspace });
      expect(again.id).toBe(id);
      const runId = (await goal.workflowHandle.describe()).runId;
      expect((await again.workflowHandle.describe()).runId).toBe(runId);
      expect(await keel.kindOf(id)).toBe('goal');

      await waitUntil(() => goal.state(), (s) => s.status === 'awaiting_plan_approval', 30_000, 'plan approval');
      expect((await goal.plan()).tasks.map((t) => t.id)).toEqual(['code', 'tests', 'docs']);
      const waiting = await keel.list({ kind: 'goal', status: 'awaiting_plan_approval' });
      expect(waiting.map((w) => w.id)).toContain(id);

      // Refusals come back typed, with the machine's reason.
      const refused = await goal.resolveTask('code', 'retry').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(UpdateRejectedError);
      expect((refused as UpdateRejectedError).reason).toMatch(/resolve_task/);
      const unknownCall = await goal.approve('toolu_nope').catch((e: unknown) => e);
      expect(unknownCall).toBeInstanceOf(UpdateRejectedError);
      expect((unknownCall as UpdateRejectedError).update).toBe('approve');

      expect((await goal.approvePlan()).status).toBe('executing');

      // Follow the stream; answer every tool call that waits (default `ask` policy). Stop
      // after the first approval, then resume from the last offset seen: nothing is lost or
      // repeated (the event log's seq runs on without a gap).
      const seen: GoalStreamItem[] = [];
      let modelText = '';
      const follow = async (from: number, stopAfterApproval: boolean) => {
        for await (const item of goal.events({ from })) {
          seen.push(item);
          if (item.topic === 'model' && item.data.kind === 'delta') modelText += item.data.text;
          if (item.topic === 'events' && item.data.kind === 'agent.approval_requested') {
            await goal.approve(item.data.callId);
            if (stopAfterApproval) return item.offset;
          }
          if (item.topic === 'events' && item.data.kind === 'plan.goal_met') break;
        }
        return -1;
      };
      const stoppedAt = await follow(0, true);
      expect(stoppedAt).toBeGreaterThan(0);
      const before = seen.length;
      await follow(stoppedAt + 1, false);
      expect(seen[before]!.offset).toBe(stoppedAt + 1);
      const seqs = seen.flatMap((i) => (i.topic === 'events' ? [i.data.seq] : []));
      expect(seqs).toEqual(seqs.map((_, i) => i));
      const kinds = seen.flatMap((i) => (i.topic === 'events' ? [i.data.kind] : []));
      expect(kinds).toContain('plan.approved');
      expect(kinds).toContain('plan.critique');
      expect(kinds.at(-1)).toBe('plan.goal_met');
      expect(modelText).toMatch(/Three tasks/);

      const result = await goal.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => t.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      expect((await goal.usage()).usage.outputTokens).toBeGreaterThan(0);
      expect(await goal.pendingApprovals()).toEqual([]);
      expect((await goal.state()).status).toBe('goal_met');
      expect((await goal.log()).entries.at(-1)?.kind).toBe('plan.goal_met');
      await fs.access(path.join(g.workspace, 'slugify.test.mjs'));
      // A start with the id of a goal that has ended is still that goal.
      const late = await keel.startGoal('something else', { id, workspace: g.workspace });
      expect((await late.workflowHandle.describe()).runId).toBe(runId);
    });
  });

  it('cancels a goal waiting for plan approval, rejects a plan, and maps an unknown id to NotFoundError', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(demoScenario), 'sk-ant-demo');
    await g.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      const goal = await keel.startGoal('Build slugify', { workspace: g.workspace });
      await waitUntil(() => goal.state(), (s) => s.status === 'awaiting_plan_approval', 30_000, 'plan approval');
      expect((await goal.rejectPlan('add a README')).status).toBe('planning');
      await waitUntil(() => goal.state(), (s) => s.status === 'awaiting_plan_approval', 30_000, 'second plan');
      expect((await goal.plan()).planVersion).toBe(2);
      await goal.cancel('changed my mind');
      const result = await goal.result();
      expect(result.verdict).toBe('stopped');
      expect(result.summary).toMatch(/changed my mind/);
      const missing = await keel.getGoal('no-such-goal').state().catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
    });
  });
});

describe('KeelClient: sessions', () => {
  it('sends messages, answers approvals and questions, interrupts, steers, pauses, lists, and closes', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(sessionScenario), { ANTHROPIC_API_KEY: 'sk-ant-demo' });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      expect(await keel.kindOf(session.id)).toBe('session');

      const hello = await session.send('hi there');
      expect(hello.outcome).toBe('completed');
      expect(hello.output).toMatch(/^Hello!/);

      // A write waits for approval: visible in state, in list({ waitingForApproval }), refusable by id.
      const writing = session.send('write a note');
      const waiting = await waitUntil(() => session.state(), (st) => st.pendingApprovals.length === 1, 30_000, 'approval');
      const callId = waiting.pendingApprovals[0]!.callId;
      await waitUntil(() => keel.list({ waitingForApproval: true }), (l) => l.some((e) => e.id === session.id), 30_000, 'listed as waiting');
      const wrong = await session.approve('toolu_wrong').catch((e: unknown) => e);
      expect(wrong).toBeInstanceOf(UpdateRejectedError);
      expect((wrong as UpdateRejectedError).reason).toMatch(/toolu_wrong/);
      const approved = await session.approve(callId, { updateId: 'approve-once' });
      expect(approved.callId).toBe(callId);
      // The same approval again with its update id (a retry after a lost answer): answered as the first, taken once.
      expect(await session.approve(callId, { updateId: 'approve-once' })).toEqual(approved);
      expect((await writing).outcome).toBe('completed');
      expect(await fs.readFile(path.join(s.workspace, 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');

      // A question the model asks is answered.
      const asking = session.send('pick a colour');
      await waitUntil(() => session.state(), (st) => st.question !== null, 30_000, 'question');
      await session.answer('blue');
      expect((await asking).outcome).toBe('completed');

      // A long reply is interrupted; steer is refused without a turn.
      const story = session.send('tell me a story');
      // Interrupted while the model answers: once the stand-in has the request.
      await waitUntil(async () => s.standin.requests.filter((r) => JSON.stringify(r.body).includes('tell me a story')).length, (n) => n > 0, 30_000, 'the story request');
      const first = await session.interrupt('enough', { updateId: 'interrupt-once' });
      expect(await session.interrupt('enough', { updateId: 'interrupt-once' })).toEqual(first);
      const interrupted = await story;
      expect(interrupted.outcome).toBe('interrupted');
      const steer = await session.steer('shorter').catch((e: unknown) => e);
      expect(steer).toBeInstanceOf(UpdateRejectedError);

      expect((await session.pause('lunch')).status).toBe('paused');
      expect((await session.resume()).status).toBe('active');
      expect((await session.raiseBudget({ turns: 100 })).status).toBe('active');
      const reset = await session.reset().catch((e: unknown) => e);
      expect(reset).toBeInstanceOf(UpdateRejectedError);
      expect((reset as UpdateRejectedError).update).toBe('reset');
      expect((await session.stop()).status).toBe('paused');
      expect((await session.resume()).status).toBe('active');
      expect(await session.pendingApprovals()).toEqual([]);
      expect((await session.transcript()).total).toBeGreaterThan(4);
      expect((await session.usage()).turns).toBeGreaterThanOrEqual(4);
      const kinds = (await session.log()).entries.map((e) => e.kind);
      expect(kinds.filter((k) => k === 'tool.approved')).toHaveLength(1);
      expect(kinds.filter((k) => k === 'turn.interrupted')).toHaveLength(1);

      await session.close('done');
      const result = await session.result();
      expect(result.outcome).toBe('closed');
    });
  });
});
