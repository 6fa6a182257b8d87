// The autonomy loop end to end: a real worker with the real activities, the model
// stand-in as planner, critic and task agents, real tools in a temp workspace. Plan →
// approve → execute a task DAG with child agents → review, and each way back: follow-up,
// replan, a rejected plan, an invalid plan; independent tasks run at once.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ANSWER_ROUNDS } from '../../machines/answer-retry';
import { loadScenario } from '../../standin/scenario';
import {
  approvePlanSignal,
  approvePlanUpdate,
  goalPendingApprovalsQuery,
  goalUsageQuery,
  planQuery,
  rejectPlanUpdate,
  resolveTaskUpdate,
  type GoalLogEntry,
} from '../../workflows/definitions';
import { agent, finish, critic, goalEnv, plan, planner, recordGoalHistory, review, task, writesFile } from '../fixtures/goal-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));

const { env, workflowBundle } = useTemporal();

const kinds = (entries: GoalLogEntry[]) => entries.map((e) => e.kind);
const ofKind = <T = Record<string, unknown>>(entries: GoalLogEntry[], kind: string) => entries.filter((e) => e.kind === kind) as unknown as T[];

describe('goal workflow', () => {
  it('plans, waits for approval, runs the tasks as child agents in dependency order, and meets the goal on the first review', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        {
          match: planner(),
          reply: plan([
            task('greet', 'Write the greeting', 'Create hello.txt containing "hello".', { acceptance: 'hello.txt says hello' }),
            task('check', 'Check the greeting', 'Run cat hello.txt.', { dependencies: ['greet'], role: 'tester' }),
          ]),
        },
        ...writesFile('greet', 'hello.txt', 'hello\n'),
        { match: agent('check', { hasToolResults: false }), reply: { content: [{ type: 'tool_use' as const, name: 'run_command', input: { command: 'cat hello.txt' } }] } },
        { match: agent('check', { hasToolResults: true }), reply: finish('hello.txt says hello.') },
        { match: critic(), reply: review('pass', 'hello.txt exists and says hello; the check ran with exit code 0.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Greet the world in hello.txt' });
      const waiting = await run.waitForState((s) => s.status === 'awaiting_plan_approval');
      expect(waiting.goal.tasks.map((t) => t.id)).toEqual(['greet', 'check']);
      const shown = await run.handle.query(planQuery);
      expect(shown.tasks[0]!.instructions).toContain('Acceptance check: hello.txt says hello');
      // A wrong-state update is refused with the machine's reason.
      const refused = await run.handle.executeUpdate(resolveTaskUpdate, { args: [{ taskId: 'greet', action: 'skip' }] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((refused as WorkflowUpdateFailedError).cause?.message)).toMatch(/not accepted in state awaiting_plan_approval/);

      expect(await run.handle.executeUpdate(approvePlanUpdate, { args: [{}] })).toEqual({ status: 'executing' });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.summary).toContain('hello.txt exists');
      expect(result.tasks.map((t) => [t.id, t.status, t.agentId])).toEqual([
        ['greet', 'succeeded', `${run.handle.workflowId}/task-greet/1`],
        ['check', 'succeeded', `${run.handle.workflowId}/task-check/1`],
      ]);
      expect(result.tasks[0]!.details).toMatchObject({ filesChanged: ['hello.txt'], summary: 'Wrote hello.txt.' });
      expect(result.tasks[1]!.details?.commands).toEqual([{ command: 'cat hello.txt', exitCode: 0, status: 'success' }]);
      expect(result.tasks[1]!.evidence).toContain('command: cat hello.txt → exit code 0');
      expect(result.reviews).toEqual([{ cycle: 1, verdict: 'pass', findings: expect.stringContaining('hello.txt') as string }]);
      expect(result.usage.outputTokens).toBeGreaterThan(0);
      expect(await fs.readFile(path.join(g.workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
      // Agents send the full tool definitions (from the store), without ask_user.
      const agentCall = g.standin.requests.find((r) => JSON.stringify(r.body).includes('task [greet]'))!.body as { tools: { name: string; description: string }[] };
      // ... plus finish_task, which ends an agent's work (machines/task-outcome.ts).
      expect(agentCall.tools.map((t) => t.name)).toEqual(['read_file', 'list_dir', 'glob', 'grep', 'write_file', 'edit_file', 'run_command', 'finish_task']);
      expect(result.tasks[1]!.result).toBe('hello.txt says hello.');
      // finish_task ends the turn: no model call after it.
      expect(g.standin.requests.filter((r) => JSON.stringify(r.body).includes('task [check]'))).toHaveLength(2);
      expect(agentCall.tools.every((t) => t.description.length > 20)).toBe(true);

      const log = await run.log();
      const k = kinds(log);
      for (const kind of ['plan.goal_received', 'plan.created', 'plan.approval_requested', 'plan.approved', 'plan.task_assigned', 'plan.task_started', 'plan.task_completed', 'plan.critique', 'plan.goal_met', 'agent.spawning', 'agent.ready', 'agent.terminated']) {
        expect(k, kind).toContain(kind);
      }
      expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i));
      // Each agent's whole usage is in its agent.terminated event.
      for (const t of ofKind<{ usage: { outputTokens: number } }>(log, 'agent.terminated')) expect(t.usage.outputTokens).toBeGreaterThan(0);
      // check started only after greet completed
      const greetDone = log.findIndex((e) => e.kind === 'plan.task_completed' && (e as { taskId?: string }).taskId === 'greet');
      const checkAssigned = log.findIndex((e) => e.kind === 'plan.task_assigned' && (e as { taskId?: string }).taskId === 'check');
      expect(greetDone).toBeGreaterThan(-1);
      expect(checkAssigned).toBeGreaterThan(greetDone);

      // Usage rolls up from every agent; the child workflows are in the tree with KeelKind=agent.
      const usage = await run.handle.query(goalUsageQuery);
      expect(Object.keys(usage.agents).sort()).toEqual([`${run.handle.workflowId}/task-check/1`, `${run.handle.workflowId}/task-greet/1`]);
      const agentTotal = Object.values(usage.agents).reduce((a, u) => a + u.outputTokens, 0);
      expect(usage.usage.outputTokens).toBeGreaterThan(agentTotal);
      const described = await run.handle.describe();
      expect(described.searchAttributes.KeelKind).toEqual(['goal']);
      expect(described.searchAttributes.KeelStatus).toEqual(['goal_met']);
      const child = await env.client.workflow.getHandle(`${run.handle.workflowId}/task-greet/1`).describe();
      expect(child.searchAttributes.KeelKind).toEqual(['agent']);
      expect(child.parentExecution?.workflowId).toBe(run.handle.workflowId);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'goal-met-first-review');
      await recordGoalHistory(env.client.workflow.getHandle(`${run.handle.workflowId}/task-check/1`), 'goal-met-first-review-agent');
    });
  });

  it('critic asks for a follow-up task → executing again → goal met', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('code', 'Write the code', 'Write app.txt.')]) },
        ...writesFile('code', 'app.txt', 'app\n'),
        ...writesFile('docs', 'README.txt', 'how to use app\n'),
        { match: critic({ lastUserContains: 'Review cycle 1' }), reply: review('follow_up', 'The code has no documentation.', [task('docs', 'Document it', 'Write README.txt.', { dependencies: ['code'] })]) },
        { match: critic({ lastUserContains: 'Review cycle 2' }), reply: review('pass', 'Code and documentation are there.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'An app with docs', autoApprove: true });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([
        ['code', 'succeeded'],
        ['docs', 'succeeded'],
      ]);
      expect(result.reviews.map((r) => r.verdict)).toEqual(['follow_up', 'pass']);
      expect(result.planVersion).toBe(2);
      const log = await run.log();
      expect(ofKind<{ changes: string }>(log, 'plan.updated')[0]!.changes).toContain('follow-up');
      expect(ofKind<{ verdict: string }>(log, 'plan.critique').map((c) => c.verdict)).toEqual(['follow_up', 'pass']);
      // The critic saw the first task's evidence.
      const criticCall = g.standin.requests.find((r) => JSON.stringify(r.body).includes('Review cycle 1'));
      expect(JSON.stringify(criticCall?.body)).toContain('file changed: app.txt');
      expect(await fs.readFile(path.join(g.workspace, 'README.txt'), 'utf8')).toBe('how to use app\n');
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'follow-up');
    });
  });

  it('critic asks to replan → planning with the reason → a new plan runs → goal met', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner({ lastUserContains: 'Wrong format' }), reply: plan([task('json', 'Write JSON', 'Write data.json.')]) },
        { match: planner(), reply: plan([task('csv', 'Write CSV', 'Write data.csv.')]) },
        ...writesFile('csv', 'data.csv', 'a,b\n'),
        ...writesFile('json', 'data.json', '{"a":1}\n'),
        { match: critic({ lastUserContains: 'Review cycle 1' }), reply: review('replan', 'Wrong format: the goal asks for JSON.') },
        { match: critic({ lastUserContains: 'Review cycle 2' }), reply: review('pass', 'data.json is there.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Data as JSON', autoApprove: true });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([['json', 'succeeded']]);
      expect(result.reviews.map((r) => r.verdict)).toEqual(['replan', 'pass']);
      const log = await run.log();
      expect(ofKind<{ feedback: string | null }>(log, 'plan.requested').map((e) => e.feedback)).toEqual([null, 'Wrong format: the goal asks for JSON.']);
      expect(kinds(log)).toContain('plan.updated');
      // The second planning round was told what the first plan had done.
      const second = g.standin.requests.filter((r) => JSON.stringify(r.body).includes('submit_plan')).at(-1);
      expect(JSON.stringify(second?.body)).toContain('[csv] Write CSV');
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'replan');
    });
  });

  it('plan rejected with feedback → the planner revises → approved (by signal) → goal met', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner({ lastUserContains: 'smaller' }), reply: plan([task('one', 'One step', 'Write one.txt.')]) },
        { match: planner(), reply: plan([task('a', 'A', 'a'), task('b', 'B', 'b'), task('c', 'C', 'c')]) },
        ...writesFile('one', 'one.txt', '1\n'),
        { match: critic(), reply: review('pass', 'one.txt is written.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'A small change' });
      await run.waitForState((s) => s.status === 'awaiting_plan_approval' && s.goal.planVersion === 1);
      const bad = await run.handle.executeUpdate(rejectPlanUpdate, { args: [{ feedback: '' }] }).catch((e: unknown) => e);
      expect(String((bad as WorkflowUpdateFailedError).cause?.message)).toMatch(/invalid rejectPlan payload/);
      await run.handle.executeUpdate(rejectPlanUpdate, { args: [{ feedback: 'Too many steps; make it smaller.' }] });
      const revised = await run.waitForState((s) => s.status === 'awaiting_plan_approval' && s.goal.planVersion === 2);
      expect(revised.goal.tasks.map((t) => t.id)).toEqual(['one']);
      await run.handle.signal(approvePlanSignal, {});
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      const log = await run.log();
      expect(ofKind<{ feedback: string }>(log, 'plan.rejected')).toMatchObject([{ feedback: 'Too many steps; make it smaller.' }]);
      expect(ofKind(log, 'plan.updated')).toHaveLength(1);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'plan-rejected');
    });
  });

  it("the planner's and critic's failed calls are retried after the retry table's wait, each retry in the goal's log first", async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), times: 2, fault: { kind: 'status', status: 529 } },
        { match: planner(), reply: plan([task('x', 'X', 'Write x.txt.')]) },
        ...writesFile('x', 'x.txt', 'x\n'),
        { match: critic(), times: 1, fault: { kind: 'status', status: 500 } },
        { match: critic(), reply: review('pass', 'x.txt is there.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'x', autoApprove: true, retryBackoffMs: [300, 400] });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      const log = await run.log();
      type Retry = { advisor: string; attempt: number; maxAttempts: number; delayMs: number; reason: string; at: string; seq: number };
      const retries = ofKind<Retry>(log, 'plan.retry_scheduled');
      expect(retries.map((r) => [r.advisor, r.attempt, r.maxAttempts, r.delayMs])).toEqual([
        ['planner', 2, ANSWER_ROUNDS, 300],
        ['planner', 3, ANSWER_ROUNDS, 400],
        ['critic', 2, ANSWER_ROUNDS, 300],
      ]);
      expect(retries.map((r) => r.reason)).toEqual([expect.stringMatching(/overloaded/i), expect.stringMatching(/overloaded/i), expect.stringMatching(/api_error|500|internal/i)]);
      // Each retry is logged before the call it announces, which comes only after the wait.
      const plannerCalls = g.standin.requests.filter((r) => JSON.stringify(r.body).includes('submit_plan'));
      expect(plannerCalls).toHaveLength(3);
      const planned = log.find((e) => e.kind === 'plan.created')!;
      expect(retries.slice(0, 2).every((r) => r.seq < planned.seq)).toBe(true);
      const critique = log.find((e) => e.kind === 'plan.critique')!;
      expect(retries[2]!.seq).toBeLessThan(critique.seq);
      expect(Date.parse(critique.at) - Date.parse(retries[2]!.at)).toBeGreaterThanOrEqual(300);
      expect(ofKind(log, 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'planner-critic-retries');
    });
  });

  it('an invalid plan (a dependency cycle) goes back to the model with the errors and is corrected', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner({ lastUserContains: 'dependency cycle' }), reply: plan([task('x', 'X', 'Write x.txt.'), task('y', 'Y', 'Write y.txt.', { dependencies: ['x'] })]) },
        { match: planner(), reply: plan([task('x', 'X', 'Write x.txt.', { dependencies: ['y'] }), task('y', 'Y', 'Write y.txt.', { dependencies: ['x'] })]) },
        ...writesFile('x', 'x.txt', 'x\n'),
        ...writesFile('y', 'y.txt', 'y\n'),
        { match: critic(), reply: review('pass', 'Both files are there.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'x then y', autoApprove: true });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      const log = await run.log();
      const invalid = ofKind<{ errors: string[] }>(log, 'plan.invalid');
      expect(invalid).toHaveLength(1);
      expect(invalid[0]!.errors.join()).toMatch(/dependency cycle: (x → y → x|y → x → y)/);
      const retry = g.standin.requests.filter((r) => JSON.stringify(r.body).includes('submit_plan'))[1];
      expect(JSON.stringify(retry?.body)).toContain('Your previous proposal was invalid');
      expect(result.tasks.map((t) => t.status)).toEqual(['succeeded', 'succeeded']);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'invalid-plan');
    });
  });

  it('two independent tasks run at the same time; the task that needs both starts after both', async () => {
    const slow = { delayMs: 150 };
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        {
          match: planner(),
          reply: plan([task('left', 'Left', 'Write left.txt.'), task('right', 'Right', 'Write right.txt.'), task('join', 'Join', 'Write both.txt.', { dependencies: ['left', 'right'], priority: 5 })]),
        },
        ...writesFile('left', 'left.txt', 'L\n', slow),
        ...writesFile('right', 'right.txt', 'R\n', slow),
        ...writesFile('join', 'both.txt', 'LR\n'),
        { match: critic(), reply: review('pass', 'All three files.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'left and right, then both', autoApprove: true, maxConcurrency: 2 });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      const log = await run.log();
      const at = (kind: string, id: string) => Date.parse(log.find((e) => e.kind === kind && (e as { taskId?: string }).taskId === id)!.at);
      const span = (id: string) => [at('plan.task_started', id), at('plan.task_completed', id)] as const;
      const [l0, l1] = span('left');
      const [r0, r1] = span('right');
      const [j0] = span('join');
      // Overlap: each started before the other finished.
      expect(l0).toBeLessThan(r1);
      expect(r0).toBeLessThan(l1);
      expect(j0).toBeGreaterThanOrEqual(Math.max(l1, r1));
      // Child workflows themselves overlapped.
      const times = async (id: string) => {
        const d = await env.client.workflow.getHandle(`${run.handle.workflowId}/task-${id}/1`).describe();
        return [d.startTime.getTime(), d.closeTime!.getTime()] as const;
      };
      const [cl0, cl1] = await times('left');
      const [cr0, cr1] = await times('right');
      const [cj0] = await times('join');
      expect(cl0).toBeLessThan(cr1);
      expect(cr0).toBeLessThan(cl1);
      expect(cj0).toBeGreaterThanOrEqual(Math.max(cl1, cr1));
      expect(await run.handle.query(goalPendingApprovalsQuery)).toEqual([]);
      expect(ofKind(await run.log(), 'event.rejected')).toEqual([]);
      await recordGoalHistory(run.handle, 'concurrent-tasks');
    });
  });

  it('an agent that answers in plain text without finish_task fails its attempt; the retry that calls it succeeds', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('say', 'Say it', 'Say that it is done.')]) },
        // Attempt 1 claims success in words only; attempt 2 reports through the tool.
        { match: agent('say'), times: 1, reply: { content: [{ type: 'text' as const, text: 'Everything is done, it all works.' }] } },
        { match: agent('say'), reply: finish('Said it.') },
        { match: critic(), reply: review('pass', 'Said.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Say it', autoApprove: true, maxTaskAttempts: 2 });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => [t.id, t.status, t.attempts, t.result])).toEqual([['say', 'succeeded', 2, 'Said it.']]);
      const completed = (await run.log()).filter((e) => e.kind === 'plan.task_completed') as unknown as { outcome: string; result: string }[];
      expect(completed.map((c) => c.outcome)).toEqual(['failed', 'succeeded']);
      expect(completed[0]!.result).toMatch(/^the agent ended its turn without calling finish_task; its last words: Everything is done/);
      // One model call per attempt: the text ended the first turn, finish_task the second.
      expect(g.standin.requests.filter((r) => JSON.stringify(r.body).includes('task [say]'))).toHaveLength(2);
    });
  });

  it('the demo scenario (client/demo/goal-demo.yaml): code, tests run with node --test, README, critic pass', async () => {
    const scenario = await loadScenario(path.join(here, '../../client/demo/goal-demo.yaml'));
    const g = await goalEnv(env, workflowBundle, scenario, 'sk-ant-demo');
    await g.run(async () => {
      const run = await g.start({ goal: 'A slugify module with passing tests and a README', policy: { mode: 'auto-edit', allow: ['run_command(node *)'] } });
      await run.waitForState((s) => s.status === 'awaiting_plan_approval');
      await run.handle.signal(approvePlanSignal, {});
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([
        ['code', 'succeeded'],
        ['tests', 'succeeded'],
        ['docs', 'succeeded'],
      ]);
      expect(result.tasks[1]!.details?.commands).toEqual([{ command: 'node --test slugify.test.mjs', exitCode: 0, status: 'success' }]);
      expect(result.tasks[1]!.details?.filesChanged).toEqual(['slugify.test.mjs']);
      for (const file of ['slugify.mjs', 'slugify.test.mjs', 'README.md']) await fs.access(path.join(g.workspace, file));
      expect(g.standin.unmatched).toEqual([]);
      await recordGoalHistory(run.handle, 'demo');
    });
  });
});
