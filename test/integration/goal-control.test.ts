// A goal under human control and limits: a task that keeps failing blocks the goal until
// a human resolves it; the budget, spent across the tree, stops everything with a partial
// report; cancel stops the children (and their commands); a child agent's tool approval
// is answered through the goal.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { KeelClient, UpdateRejectedError } from '../../client/index';
import { resolveTemporalCli } from '../../worker/dev-server';
import { cancelUpdate, eventsQuery, goalApproveUpdate, goalPendingApprovalsQuery, goalUsageQuery, resolveTaskUpdate, type GoalLogEntry } from '../../workflows/definitions';
import { agent, finish, attachGoal, critic, goalEnv, plan, planner, recordGoalHistory, review, task, waitUntil, writesFile } from '../fixtures/goal-harness';
import { hostPidWith, isAlive, matching } from '../unit/tools/context';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const ofKind = <T = Record<string, unknown>>(entries: GoalLogEntry[], kind: string) => entries.filter((e) => e.kind === kind) as unknown as T[];

describe('goal control', () => {
  it('a task that fails on every attempt blocks the goal; resolveTask skip lets it complete', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('ok', 'The easy part', 'Write ok.txt.'), task('flaky', 'The hard part', 'Call the external API.')]) },
        ...writesFile('ok', 'ok.txt', 'ok\n'),
        // Attempt 1: the agent gives up; attempt 2: the model call fails for good.
        { match: agent('flaky'), times: 1, reply: finish('the external API is down.', 'failed') },
        { match: agent('flaky'), fault: { kind: 'status', status: 400, message: 'prompt is malformed' } },
        { match: critic({ lastUserContains: 'flaky] The hard part — skipped' }), reply: review('pass', 'ok.txt is there; the API part was skipped by a human.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Do both parts', autoApprove: true, maxTaskAttempts: 2 });
      const blocked = await run.waitForState((s) => s.status === 'blocked');
      expect(blocked.reason).toBe('tasks failed: flaky');
      const flaky = blocked.goal.tasks.find((t) => t.id === 'flaky')!;
      expect(flaky).toMatchObject({ status: 'failed', attempts: 2, agentId: `${run.handle.workflowId}/task-flaky/2` });
      expect(flaky.result).toMatch(/ModelBadRequest|prompt is malformed/);
      const described = await waitUntil(() => run.handle.describe(), (d) => d.searchAttributes.KeelStatus?.[0] === 'blocked', 10_000, 'KeelStatus=blocked');
      expect(described.searchAttributes.KeelStatus).toEqual(['blocked']);

      const refused = await run.handle.executeUpdate(resolveTaskUpdate, { args: [{ taskId: 'ok', action: 'skip' }] }).catch((e: unknown) => e);
      expect(String((refused as WorkflowUpdateFailedError).cause?.message)).toMatch(/task ok has not failed/);
      const noEdit = await run.handle.executeUpdate(resolveTaskUpdate, { args: [{ taskId: 'flaky', action: 'edit' }] }).catch((e: unknown) => e);
      expect(String((noEdit as WorkflowUpdateFailedError).cause?.message)).toMatch(/edit needs instructions/);

      // edit: one more attempt with new instructions (a new child agent); it fails too.
      expect(await run.handle.executeUpdate(resolveTaskUpdate, { args: [{ taskId: 'flaky', action: 'edit', instructions: 'Use the mirror API instead.' }] })).toEqual({ status: 'executing' });
      const again = await run.waitForState((s) => s.status === 'blocked' && s.goal.tasks.some((t) => t.id === 'flaky' && t.attempts === 3));
      expect(again.goal.tasks.find((t) => t.id === 'flaky')?.agentId).toBe(`${run.handle.workflowId}/task-flaky/3`);
      expect(JSON.stringify(g.standin.requests.at(-1)?.body)).toContain('Use the mirror API instead.');

      await run.handle.executeUpdate(resolveTaskUpdate, { args: [{ taskId: 'flaky', action: 'skip' }] });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([
        ['ok', 'succeeded'],
        ['flaky', 'skipped'],
      ]);
      const log = await run.log();
      expect(ofKind<{ taskId: string; outcome: string; attempt: number }>(log, 'plan.task_completed').map((e) => [e.taskId, e.outcome, e.attempt])).toEqual(
        expect.arrayContaining([
          ['flaky', 'failed', 1],
          ['flaky', 'failed', 2],
          ['ok', 'succeeded', 1],
        ]),
      );
      expect(ofKind(log, 'plan.blocked')).toMatchObject([{ taskIds: ['flaky'] }, { taskIds: ['flaky'] }]);
      expect(ofKind(log, 'plan.task_resolved')).toMatchObject([
        { taskId: 'flaky', action: 'edit' },
        { taskId: 'flaky', action: 'skip' },
      ]);
      expect(ofKind<{ error: string }>(log, 'agent.failed')[0]!.error).toBe('the external API is down.');
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'blocked-skip');
    });
  });

  it('the budget, spent across the tree, runs out mid-execution: running agents are cancelled, the report says what was done', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        {
          match: planner(),
          reply: plan([
            task('first', 'First', 'Write first.txt.', { priority: 10 }),
            task('hog', 'Expensive', 'Think hard.', { dependencies: ['first'] }),
            task('slow', 'Slow', 'Talk slowly.', { dependencies: ['first'] }),
          ]),
        },
        ...writesFile('first', 'first.txt', '1\n'),
        // It would write 50 000 tokens: the API bills no more than max_tokens, and its call is fitted to its share.
        { match: agent('hog'), reply: { content: [{ type: 'text' as const, text: 'Thinking…' }], usage: { input_tokens: 100, output_tokens: 50_000 }, delayMs: 300 } },
        // Held mid-answer until it is cancelled: it cannot end before the budget runs out, however slow the machine.
        { match: agent('slow'), reply: { content: [{ type: 'text' as const, text: 'a long story '.repeat(40) }], chunkSize: 8 }, fault: { kind: 'hang' as const, afterEvents: 5 } },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Three things', autoApprove: true, maxConcurrency: 2, maxTokens: 32_000, limits: { outputTokens: 20_000 } });
      const result = await run.handle.result();
      expect(result.verdict).toBe('stopped');
      expect(result.summary).toMatch(/budget exhausted/);
      expect(result.exhaustion).toMatchObject({ limit: 'output_tokens', allowed: 20_000 });
      // A ceiling across the tree: the two agents running at once had half of what was left each.
      expect(result.usage.outputTokens).toBeLessThanOrEqual(20_000);
      // And every token the stand-in billed is in the goal's figures, the slow agent's cut-off call too.
      const billed = await waitUntil(async () => g.standin.requests, (rs) => rs.every((r) => r.closedAt !== null), 30_000, 'every call closed');
      const billedOut = billed.reduce((n, r) => n + (r.usage?.output_tokens ?? 0), 0);
      expect(Math.abs(result.usage.outputTokens - billedOut)).toBeLessThanOrEqual(0.05 * billedOut);
      expect(result.usage.inputTokens).toBe(billed.reduce((n, r) => n + (r.usage === null ? 0 : r.usage.input_tokens + (r.usage.cache_creation_input_tokens ?? 0) + (r.usage.cache_read_input_tokens ?? 0)), 0));
      const hogCall = g.standin.requests.find((r) => JSON.stringify(r.body).includes('task [hog]'))!;
      const slowCall = g.standin.requests.find((r) => JSON.stringify(r.body).includes('task [slow]'))!;
      const hogMax = (hogCall.body as { max_tokens: number }).max_tokens;
      expect(hogMax).toBeLessThan(10_000);
      // Shares of an odd number of tokens differ by one.
      expect(Math.abs((slowCall.body as { max_tokens: number }).max_tokens - hogMax)).toBeLessThanOrEqual(1);
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([
        ['first', 'succeeded'],
        // Out of budget, not retried: another attempt would meet the same wall.
        ['hog', 'failed'],
        ['slow', 'cancelled'],
      ]);
      expect(result.tasks[0]!.details?.filesChanged).toEqual(['first.txt']);
      const usage = await run.handle.query(goalUsageQuery);
      expect(usage.agents[`${run.handle.workflowId}/task-hog/1`]?.outputTokens).toBe(hogMax);
      expect(usage.agents[`${run.handle.workflowId}/task-hog/2`]).toBeUndefined();
      const slow = await env.client.workflow.getHandle(`${run.handle.workflowId}/task-slow/1`).describe();
      expect(slow.status.name).toBe('CANCELLED');
      // The slow agent's model call was cut off, not left to finish.
      expect(slowCall.outcome).not.toBe('completed');
      const log = await run.log();
      expect(ofKind(log, 'budget.exhausted')).toMatchObject([{ limit: 'output_tokens', scope: `goal ${run.handle.workflowId}` }]);
      expect(ofKind(log, 'plan.stopped')).toHaveLength(1);
      // An agent whose turn ended just as the budget ran out reports late: recorded, not applied.
      for (const late of ofKind(log, 'event.rejected')) expect(late).toMatchObject({ state: 'stopped', event: 'task_finished' });
      await recordGoalHistory(run.handle, 'budget-stop-shares');
    });
  });

  it("a goal that cancels its agent mid-stream counts what the stand-in billed for the cut-off call: within 5 % in all", async () => {
    // A long answer held after ~300 of its ~650 deltas until the client closes it.
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('slow', 'Slow', 'Talk slowly.')]) },
        { match: agent('slow'), reply: { content: [{ type: 'text' as const, text: 'a long story '.repeat(400) }], chunkSize: 8 }, fault: { kind: 'hang' as const, afterEvents: 300 } },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Tell it', autoApprove: true });
      const isSlow = (r: { body: unknown }) => JSON.stringify(r.body).includes('task [slow]');
      // Its answer is streaming (the stand-in rendered it, and writes it up to the hang at once): the goal is cancelled under it.
      await waitUntil(async () => g.standin.requests.some((r) => isSlow(r) && r.usage !== null), (streaming) => streaming, 120_000, "the slow agent's answer");
      expect((await run.handle.executeUpdate(cancelUpdate, { args: [{ reason: 'enough' }] })).status).toBe('stopped');
      const result = await run.handle.result();
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([['slow', 'cancelled']]);
      // The stand-in bills as the API does: the cut-off stream for what it had generated when the client closed it.
      const slowCall = await g.standin.waitFor((r) => isSlow(r) && r.closedAt !== null, 30_000);
      expect(slowCall.clientClosedEarly).toBe(true);
      // One attempt, cut off: some way into its ~1,300 tokens.
      expect(g.standin.requests.filter(isSlow)).toHaveLength(1);
      expect(slowCall.usage!.output_tokens).toBeGreaterThan(100);
      expect(slowCall.usage!.output_tokens).toBeLessThan(1_000);
      const billed = g.standin.requests.filter((r) => r.usage !== null).map((r) => r.usage!);
      const input = billed.reduce((n, u) => n + u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0), 0);
      const output = billed.reduce((n, u) => n + u.output_tokens, 0);
      console.log(`goal cancelled mid-stream: ${result.usage.inputTokens} in / ${result.usage.outputTokens} out counted, ${input} / ${output} billed (the cut-off call ${slowCall.usage!.output_tokens} out)`);
      expect(Math.abs(result.usage.inputTokens - input)).toBeLessThanOrEqual(0.05 * input);
      expect(Math.abs(result.usage.outputTokens - output)).toBeLessThanOrEqual(0.05 * output);
      const usage = await run.handle.query(goalUsageQuery);
      expect(usage.usage).toEqual(result.usage);
      expect(usage.agents[`${run.handle.workflowId}/task-slow/1`]?.outputTokens).toBeGreaterThan(0);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'cancel-settled-usage');
      await recordGoalHistory(env.client.workflow.getHandle(`${run.handle.workflowId}/task-slow/1`), 'cancel-settled-usage-agent');
    });
  });

  it('cancel mid-execution: the child agents are cancelled (their commands killed) and the goal stops with a partial report', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('build', 'Build', 'Run the build.'), task('after', 'After', 'Never runs.', { dependencies: ['build'] })]) },
        {
          match: agent('build', { hasToolResults: false }),
          // A command that runs until it is killed (its own timeout is half an hour): the cancel
          // cannot come after it ended, however slow the machine (at 30 s it once had, at load 30-50).
          reply: { content: [{ type: 'tool_use' as const, name: 'run_command', input: { command: 'echo started > pid.txt; sleep 1790.4171; echo built > built.txt', timeout_seconds: 1800 } }] },
        },
        { match: agent('build', { hasToolResults: true }), reply: finish('Built.') },
      ],
    });
    // The command sleeps for half an hour: should the cancel not kill it, the test does.
    onTestFinished(() => {
      for (let tries = 0; tries < 10; tries++) {
        const pid = hostPidWith('1790.4171');
        if (pid === 0) return;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Build it', autoApprove: true });
      // The command runs in the sandbox's own pid namespace: its host pid is found by its marker.
      const pid = await waitUntil(async () => hostPidWith('1790.4171'), (p) => p > 0, 120_000, 'the command');
      const answer = await run.handle.executeUpdate(cancelUpdate, { args: [{ reason: 'changed my mind' }] });
      expect(answer.status).toBe('stopped');
      const result = await run.handle.result();
      expect(result).toMatchObject({ verdict: 'stopped', summary: 'changed my mind' });
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([
        ['build', 'cancelled'],
        ['after', 'pending'],
      ]);
      const child = env.client.workflow.getHandle(`${run.handle.workflowId}/task-build/1`);
      expect((await child.describe()).status.name).toBe('CANCELLED');
      // The goal ended only after the child's command was killed.
      expect(isAlive(pid)).toBe(false);
      await expect(fs.access(path.join(g.workspace, 'built.txt'))).rejects.toThrow();
      const log = await run.log();
      expect(ofKind(log, 'plan.stopped')).toMatchObject([{ reason: 'changed my mind' }]);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'cancel');

      // Temporal's own cancel does the same.
      await fs.rm(path.join(g.workspace, 'pid.txt'));
      const again = await g.start({ goal: 'Build it again', autoApprove: true });
      const pid2 = await waitUntil(async () => hostPidWith('1790.4171'), (p) => p > 0, 120_000, 'the command');
      await again.handle.cancel();
      const second = await again.handle.result();
      expect(second).toMatchObject({ verdict: 'stopped', summary: 'the workflow was cancelled' });
      expect((await env.client.workflow.getHandle(`${again.handle.workflowId}/task-build/1`).describe()).status.name).toBe('CANCELLED');
      expect(isAlive(pid2)).toBe(false);
    });
  });

  it("a child agent's tool approval surfaces on the goal and is answered through it", async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('note', 'Write a note', 'Write NOTE.md.')]) },
        { match: agent('note', { hasToolResults: false }), reply: { content: [{ type: 'tool_use' as const, id: 'toolu_goal_write', name: 'write_file', input: { path: 'NOTE.md', content: 'approved through the goal\n' } }] } },
        { match: agent('note', { hasToolResults: true }), reply: finish('Wrote NOTE.md.') },
        { match: critic(), reply: review('pass', 'The note is there.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'A note', autoApprove: true, policy: { mode: 'ask' } });
      const waiting = await run.waitForState((s) => s.pendingApprovals.length === 1);
      const agentId = `${run.handle.workflowId}/task-note/1`;
      expect(waiting.pendingApprovals[0]).toMatchObject({ callId: 'toolu_goal_write', name: 'write_file', agentId, taskId: 'note' });
      expect(await run.handle.query(goalPendingApprovalsQuery)).toHaveLength(1);
      const described = await waitUntil(() => run.handle.describe(), (d) => d.searchAttributes.KeelPendingApprovals?.[0] === 1, 10_000, 'KeelPendingApprovals=1');
      expect(described.searchAttributes.KeelPendingApprovals).toEqual([1]);

      const unknown = await run.handle.executeUpdate(goalApproveUpdate, { args: [{ callId: 'toolu_nope' }] }).catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((unknown as WorkflowUpdateFailedError).cause?.message)).toMatch(/unknown call id toolu_nope: waiting for approval: toolu_goal_write/);

      // A session rule that does not cover the call is refused to the caller, with its code —
      // before, the goal forwarded it and only the agent refused it, where nobody heard.
      const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      const uncovered = await keel
        .getGoal(run.handle.workflowId)
        .approve('toolu_goal_write', { scope: 'session', rule: 'write_file(OTHER.md)' })
        .catch((e: unknown) => e);
      expect(uncovered).toBeInstanceOf(UpdateRejectedError);
      expect(uncovered).toMatchObject({ code: 'rule_does_not_cover', reason: matching(/rule "write_file\(OTHER.md\)" does not cover the call being approved \(write_file/) });
      const onceWithRule = await run.handle.executeUpdate(goalApproveUpdate, { args: [{ callId: 'toolu_goal_write', rule: 'write_file(NOTE.md)' }] }).catch((e: unknown) => e);
      expect((onceWithRule as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'rule_needs_session_scope' });
      expect((unknown as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'unknown_call' });
      // Nothing was lost: the call still waits, and the agent recorded no refusal.
      expect(await run.handle.query(goalPendingApprovalsQuery)).toMatchObject([{ callId: 'toolu_goal_write' }]);

      expect(await run.handle.executeUpdate(goalApproveUpdate, { args: [{ callId: 'toolu_goal_write' }] })).toMatchObject({ callId: 'toolu_goal_write', agentId });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(await fs.readFile(path.join(g.workspace, 'NOTE.md'), 'utf8')).toBe('approved through the goal\n');
      expect(result.tasks[0]!.details?.filesChanged).toEqual(['NOTE.md']);
      const d = await run.handle.describe();
      expect(d.searchAttributes.KeelPendingApprovals).toEqual([0]);
      const log = await run.log();
      expect(ofKind(log, 'agent.approval_requested')).toMatchObject([{ agentId, taskId: 'note', callId: 'toolu_goal_write', toolName: 'write_file', input: { path: 'NOTE.md' } }]);
      expect(ofKind(log, 'agent.approval_answered')).toMatchObject([{ agentId, callId: 'toolu_goal_write', decision: 'approved' }]);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      const agentLog = await env.client.workflow.getHandle(agentId).query(eventsQuery);
      expect(agentLog.entries.filter((e) => e.kind === 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'child-approval');
      await recordGoalHistory(env.client.workflow.getHandle(agentId), 'child-approval-agent');
    });
  });

  it('stops when nobody approves the plan in time, and when the wall-clock budget runs out', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('talk', 'Talk', 'Talk for a long time.')]) },
        // Talks until it is cancelled: the agent is running whenever the deadline comes.
        { match: agent('talk'), reply: { content: [{ type: 'text' as const, text: 'and then '.repeat(200) }], chunkSize: 4 }, fault: { kind: 'hang' as const, afterEvents: 5 } },
      ],
    });
    await g.run(async () => {
      const unapproved = await g.start({ goal: 'Wait for me', planApprovalTimeoutMs: 300 });
      const first = await unapproved.handle.result();
      expect(first).toMatchObject({ verdict: 'stopped', summary: 'no one approved the plan in time', exhaustion: null });
      expect(first.tasks.map((t) => t.status)).toEqual(['pending']);

      // The budget runs from the goal's start and must outlast the planning (the planner's
      // call, the plan, the agent's start), which took longer than 1.5 s on a busy machine.
      const timed = await g.start({ goal: 'Be quick', autoApprove: true, limits: { wallClockMs: 5_000 } });
      await timed.waitForState((s) => s.running.length === 1);
      const second = await timed.handle.result();
      expect(second).toMatchObject({ verdict: 'stopped', summary: 'the wall-clock budget is exhausted', exhaustion: { limit: 'wall_clock', allowed: 5_000 } });
      expect(second.tasks.map((t) => t.status)).toEqual(['cancelled']);
      expect((await env.client.workflow.getHandle(`${timed.handle.workflowId}/task-talk/1`).describe()).status.name).toBe('CANCELLED');
      expect(ofKind(await timed.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(timed.handle, 'wall-clock');
    });
  });

  it('the Temporal CLI starts a goal, finds it waiting for plan approval and approves it (docs/goals.md payloads)', async () => {
    const run = promisify(execFile);
    const cli = await resolveTemporalCli('path');
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('cli', 'From the CLI', 'Write cli.txt.')]) },
        ...writesFile('cli', 'cli.txt', 'cli\n'),
        { match: critic(), reply: review('pass', 'cli.txt is there.') },
      ],
    });
    await g.run(async () => {
      const common = ['--address', env.address, '--namespace', env.namespace];
      const workflowId = `goal-cli-${g.taskQueue.slice(-8)}`;
      const input = JSON.stringify({ goal: 'A file from the CLI', workspace: g.workspace, policy: { mode: 'full-auto' } });
      await run(cli, ['workflow', 'start', ...common, '--task-queue', g.taskQueue, '--type', 'goalWorkflow', '--workflow-id', workflowId, '--input', input]);
      const goal = attachGoal(env, workflowId);
      try {
        await goal.waitForState((s) => s.status === 'awaiting_plan_approval');
        const listed = await waitUntil(
          async () => (await run(cli, ['workflow', 'list', ...common, '--query', `KeelKind = 'goal' AND KeelStatus = 'awaiting_plan_approval' AND WorkflowId = '${workflowId}'`, '-o', 'json'])).stdout,
          (out) => out.includes(workflowId),
          20_000,
          'the CLI to list the goal',
        );
        expect(listed).toContain(workflowId);
        const bad = await run(cli, ['workflow', 'update', 'execute', ...common, '--workflow-id', workflowId, '--name', 'resolveTask', '--input', '{"taskId":"cli","action":"edit"}']).catch((e: unknown) => e);
        expect(String((bad as { stderr?: string }).stderr)).toMatch(/edit needs instructions/);
        await run(cli, ['workflow', 'update', 'execute', ...common, '--workflow-id', workflowId, '--name', 'approvePlan']);
        const result = await goal.handle.result();
        expect(result.verdict).toBe('goal_met');
        const { stdout } = await run(cli, ['workflow', 'query', ...common, '--workflow-id', workflowId, '--name', 'plan', '-o', 'json']);
        expect(stdout).toContain('"planVersion": 1');
      } finally {
        await goal.handle.terminate('test over').catch(() => undefined);
      }
    });
  });
});
