// KeelStatus shows where a workflow rests (machines/search-status.ts): a session's turns
// and an agent's steps write no search attributes of their own, so history does not grow
// by two upserts a turn; approvals still show at once, and a run recorded before the
// change (test/histories) replays with its old upserts (replay.test.ts).
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { readInbox } from '../../server/inbox';
import { approveUpdate, closeUpdate, userMessageUpdate } from '../../workflows/definitions';
import { critic, goalEnv, plan, planner, recordGoalHistory, review, task, writesFile } from '../fixtures/goal-harness';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** The KeelStatus / KeelPendingApprovals values each upsert in a run's history wrote, in order. */
/** Keel's own search attribute writes: without the SDK's TemporalChangeVersion, one per patch a run first asks for
 * (an unstamped run asks `tool-results-stored` at its first tool call) — not a status write. */
async function keelUpserts(handle: WorkflowHandle): Promise<string[]> {
  return (await upserts(handle)).flatMap((u) => {
    const keel = u.split(' ').filter((f) => !f.startsWith('TemporalChangeVersion='));
    return keel.length ? [keel.join(' ')] : [];
  });
}

async function upserts(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (!fields) return [];
    return [
      Object.keys(fields)
        .sort()
        .map((k) => `${k}=${Buffer.from(fields[k]!.data ?? new Uint8Array()).toString()}`)
        .join(' '),
    ];
  });
}

/** A goal of one task: the planner plans it, its agent writes hello.txt, the critic passes it. */
const greetingGoal = () => ({
  rules: [
    { match: planner(), reply: plan([task('greet', 'Write the greeting', 'Create hello.txt containing "hello".')]) },
    ...writesFile('greet', 'hello.txt', 'hello\n'),
    { match: critic(), reply: review('pass', 'hello.txt says hello.') },
  ],
});

/** Each marker's name in a run's history, in order (core_patch: a `patched()` call; core_local_activity: a local activity). */
async function markers(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).flatMap((e) => (e.markerRecordedEventAttributes ? [e.markerRecordedEventAttributes.markerName ?? ''] : []));
}

describe('run format (workflows/run-format.ts)', () => {
  it('a session KeelClient starts is stamped: it asks for no patch, loads its setup in its first task, shows its search attributes from the start and writes only `closed`; an unstamped one asks and writes as before', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: {}, reply: say('Hello.') }] });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      for (const text of ['one', 'two']) expect((await session.send(text)).outcome).toBe('completed');
      // Findable from its first moment, though the workflow wrote none of it.
      const described = await session.workflowHandle.describe();
      expect(described.searchAttributes).toMatchObject({ KeelKind: ['session'], KeelWorkspace: [s.workspace], KeelStatus: ['active'], KeelPendingApprovals: [0] });
      expect(await upserts(session.workflowHandle)).toEqual([]);
      // And it shows up where people look for open sessions.
      const listed = await waitUntil(() => keel.list({ kind: 'session', status: 'active' }), (xs) => xs.some((x) => x.id === session.id), 10_000, 'listed as active');
      expect(listed.find((x) => x.id === session.id)).toMatchObject({ kind: 'session', status: 'active', pendingApprovals: 0 });
      await session.close();
      expect(await upserts(session.workflowHandle)).toEqual(['KeelPendingApprovals=0 KeelStatus="closed"']);
      expect(await markers(session.workflowHandle)).toEqual(['core_local_activity']);
      await recordHistory(session.workflowHandle, 'stamped-session');

      // Started without the stamp (the Temporal CLI, an older client): every patch asked, setup an activity.
      const run = await s.start({});
      await run.handle.executeUpdate(userMessageUpdate, { args: ['one'] });
      await run.waitForState((v) => v.session.turns === 1 && v.status === 'active');
      await run.handle.executeUpdate(closeUpdate, { args: [{ reason: 'done' }] });
      await run.handle.result();
      expect((await markers(run.handle)).filter((m) => m === 'core_patch').length).toBeGreaterThanOrEqual(2);
      const written = await upserts(run.handle);
      expect(written.some((u) => u.includes('TemporalChangeVersion'))).toBe(true);
      expect(written.some((u) => u.includes('KeelKind="session"'))).toBe(true);
    });
  });

  it('a goal KeelClient starts is stamped, and so are its task agents: no patch asked, neither writes its kind or workspace', async () => {
    const g = await goalEnv(env, workflowBundle, greetingGoal());
    await g.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      const goal = await keel.startGoal('Greet the world in hello.txt', { workspace: g.workspace, autoApprove: true, policy: { mode: 'full-auto' } });
      expect((await goal.result()).verdict).toBe('goal_met');
      const agent = env.client.workflow.getHandle(`${goal.id}/task-greet/1`);
      for (const handle of [goal.workflowHandle, agent]) {
        expect(await markers(handle)).not.toContain('core_patch');
        const written = await upserts(handle);
        expect(written.some((u) => u.includes('TemporalChangeVersion') || u.includes('KeelKind'))).toBe(false);
      }
      expect((await agent.describe()).searchAttributes).toMatchObject({ KeelKind: ['agent'], KeelWorkspace: [g.workspace], KeelStatus: ['completed'] });
      await recordGoalHistory(goal.workflowHandle, 'stamped-goal');
      await recordGoalHistory(agent, 'stamped-goal-agent');
    });
  });
});

describe('KeelStatus: resting states only', () => {
  it('a session writes no search attribute for its turns; an approval shows and clears; the status says active while a turn runs', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'write it', hasToolResults: false }, reply: use('write_file', { path: 'a.txt', content: 'one' }, 'toolu_write_1') },
        { match: { lastUserContains: 'read it', hasToolResults: false }, reply: use('read_file', { path: 'a.txt' }, 'toolu_read_1', 'Reading.') },
        { match: { hasToolResults: true }, reply: say('Done.') },
        { match: {}, reply: say('Hello.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ policy: { mode: 'ask' } });
      await run.waitForState((v) => v.status === 'active');
      const atStart = await waitUntil(() => keelUpserts(run.handle), (u) => u.some((x) => x.includes('KeelStatus="active"')), 10_000, 'KeelStatus=active');

      // Three turns without approvals (one with a read-only tool call): no upsert at all.
      for (const text of ['hi', 'read it', 'hi again']) {
        await run.handle.executeUpdate(userMessageUpdate, { args: [text] });
        await run.waitForState((v) => v.status === 'active' && v.turn?.status !== 'calling_llm' && v.queueLength === 0 && v.session.turns >= 1);
      }
      await run.waitForState((v) => v.session.turns === 3 && v.status === 'active');
      expect(await keelUpserts(run.handle)).toEqual(atStart);

      // A turn waiting for approval: the state query says processing, KeelStatus stays active and
      // KeelPendingApprovals is 1 — what `keel list --waiting` and the Web UI filter on.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['write it'] });
      const waiting = await run.waitForState((v) => v.pendingApprovals.length === 1);
      expect(waiting.status).toBe('processing');
      const described = await waitUntil(() => run.handle.describe(), (d) => d.searchAttributes.KeelPendingApprovals?.[0] === 1, 10_000, 'KeelPendingApprovals=1');
      expect(described.searchAttributes.KeelStatus).toEqual(['active']);
      await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_write_1' }] });
      await run.waitForState((v) => v.session.turns === 4 && v.status === 'active');
      const after = await keelUpserts(run.handle);
      expect(after.slice(atStart.length)).toEqual(['KeelPendingApprovals=1 KeelStatus="active"', 'KeelPendingApprovals=0 KeelStatus="active"']);

      await run.handle.executeUpdate(closeUpdate, { args: [{ reason: 'done' }] });
      await run.handle.result();
      expect((await keelUpserts(run.handle)).slice(after.length)).toEqual(['KeelPendingApprovals=0 KeelStatus="closed"']);
      await recordHistory(run.handle, 'resting-search-status');
    });
  });

  it("a session's question is in the inbox: KeelStatus awaiting_input, which the inbox lists", async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'pick a colour', hasToolResults: false }, reply: use('ask_user', { question: 'Which colour?' }, 'toolu_ask') },
        { match: { hasToolResults: true }, reply: say('Blue it is.') },
      ],
    });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      await session.post('pick a colour');
      await waitUntil(() => session.state(), (v) => v.question !== null, 30_000, 'question');
      const items = await waitUntil(() => readInbox(keel), (xs) => xs.some((i) => i.workflowId === session.id), 30_000, 'question in the inbox');
      expect(items.filter((i) => i.workflowId === session.id)).toEqual([{ type: 'question', workflowId: session.id, callId: 'toolu_ask', question: 'Which colour?' }]);
      expect((await session.workflowHandle.describe()).searchAttributes.KeelStatus).toEqual(['awaiting_input']);
      await session.close();
    });
  });

  it("a task agent writes working once for all its steps, then how it ended; the goal's phases are still written", async () => {
    const g = await goalEnv(env, workflowBundle, greetingGoal());
    await g.run(async () => {
      const run = await g.start({ goal: 'Greet the world in hello.txt', autoApprove: true });
      expect((await run.handle.result()).verdict).toBe('goal_met');
      const agentHandle = env.client.workflow.getHandle(`${run.handle.workflowId}/task-greet/1`);
      const statuses = (await upserts(agentHandle)).filter((u) => u.includes('KeelStatus'));
      // Two model calls and a tool call (three turn states), one status while it worked.
      expect(statuses).toEqual(['KeelPendingApprovals=0 KeelStatus="working"', 'KeelPendingApprovals=0 KeelStatus="completed"']);
      const goalStatuses = (await upserts(run.handle)).filter((u) => u.includes('KeelStatus')).map((u) => u.replace(/.*KeelStatus=/, ''));
      expect(goalStatuses).toContain('"executing"');
      expect(goalStatuses.at(-1)).toBe('"goal_met"');
      await recordGoalHistory(agentHandle, 'resting-search-status-agent');
    });
  });
});
