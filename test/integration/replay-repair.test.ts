// A run the SDK can no longer replay is repaired without a human when it is the SDK's
// update-ordering fault (a retried workflow task that accepted an update: machines/replay-repair.ts),
// and left, with its reason, when the workflow code and its history simply disagree.
// 1. The run `npm run fleet` seed 4501 left stuck: replayed with today's workflow code it fails
//    where the SDK fault says, and the repair is a reset to the retried task, whose history
//    before it replays.
// 2. Live, on the dev server: a run whose retried task (it timed out while an update came) made
//    the command the replaying code does not make is marked by the server, found by the sweep,
//    reset, and goes on — the update that came while its task was held is applied again, no step
//    runs twice. A run that disagrees in a task that was no retry is left alone, with the reason.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateStage } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import proto from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { keelWorkflowSinks } from '../../worker/telemetry';
import { diagnoseHistory, historyMarks } from '../../worker/replay-repair';
import { startReplayRepairSweep } from '../../worker/replay-repair-sweep';
import { workflowsPath } from '../../worker/worker';
import { noteUpdate, repairWorkflow } from '../fixtures/repair-workflow';
import { waitUntil } from '../fixtures/session-harness';
import { stopWhenTestEnds } from '../fixtures/worker-teardown';
import { useTemporal } from '../fixtures/use-temporal';
import { bundle, keelWorkflowBundleFile, uniqueTaskQueue } from '../helpers/temporal';
import { cliEnv, keel } from '../fixtures/client-cli';

const here = path.dirname(fileURLToPath(import.meta.url));
const { temporal } = proto;

// Both tests bundle their own workflows (the fleet's history is Keel's; the live one a fixture's).
const { env } = useTemporal({ workflows: false });

describe('replay repair', () => {
  it("the fleet run stuck on the SDK's update ordering: today's code fails at event 197; the repair resets to the retried task (196), before which it replays", async () => {
    const history = JSON.parse(readFileSync(path.join(here, '../../bench/results/fleet-4501-canary-host-0-history.json'), 'utf8')) as { events: never[] };
    const replay = { workflowBundle: await bundle(workflowsPath), sinks: keelWorkflowSinks(null) };
    const workflowId = 'fleet-4501-1795932596030-canary-host-0';
    const diagnosis = await diagnoseHistory(replay, history, workflowId);
    expect(diagnosis).toMatchObject({ kind: 'nondeterminism', failedAt: 197, plan: { kind: 'reset', toEventId: 196 } });
    expect(diagnosis.kind === 'nondeterminism' && diagnosis.message).toMatch(/Update machine does not handle this event: HistoryEvent\(id: 197/);
    const before = { events: history.events.filter((e: { eventId: string }) => Number(e.eventId) < 196) };
    expect(await diagnoseHistory(replay, before, workflowId)).toEqual({ kind: 'replays' });
  });

  it('live: the retried-task run is marked, reset by the sweep and finishes with every update; the other is left with its reason', async () => {
    // The fixtures import none of Keel's preloaded modules: nothing to preload.
    const [original, changed] = await Promise.all([bundle(path.join(here, '../fixtures/repair-workflow.ts'), { preload: false }), bundle(path.join(here, '../fixtures/repair-workflow-changed.ts'), { preload: false })]);
    const taskQueue = uniqueTaskQueue('replay-repair');
    const held = `held-${taskQueue}`;
    const plain = `plain-${taskQueue}`;
    // The first step of the held run waits until the test lets it go; every step is counted.
    let releaseFirst!: () => void;
    const firstReleased = new Promise<void>((resolve) => (releaseFirst = resolve));
    const steps: string[] = [];
    const activities = {
      async step(name: string) {
        const workflowId = Context.current().info.workflowExecution?.workflowId;
        steps.push(`${workflowId}:${name}`);
        if (workflowId === held && name === 'one') await firstReleased;
        return `step ${name}`;
      },
    };
    const runWorker = async (options: { workflowBundle?: WorkflowBundleWithSourceMap; activities?: typeof activities }) => {
      const worker = await Worker.create({ connection: env.nativeConnection, namespace: env.namespace, taskQueue, stickyQueueScheduleToStartTimeout: '1s', ...options });
      const stop = stopWhenTestEnds(worker, worker.run());
      return { worker, stop };
    };
    const workflowsOf = (workflowBundle: WorkflowBundleWithSourceMap) => runWorker({ workflowBundle });
    await runWorker({ activities });
    let workflows = await workflowsOf(original);

    // The plain run: both steps done, an update accepted in a task of its own (no retry).
    const plainRun = await env.client.workflow.start(repairWorkflow, { taskQueue, workflowId: plain });
    await waitUntil(async () => steps.includes(`${plain}:two`), Boolean, 60_000, 'the plain run to reach its second step');
    await plainRun.executeUpdate(noteUpdate, { args: ['plain note'] });

    // The held run: its first step runs while no worker takes workflow tasks; the task that
    // step's result schedules is taken here and never answered, and an update comes meanwhile.
    const heldRun = await env.client.workflow.start(repairWorkflow, { taskQueue, workflowId: held, workflowTaskTimeout: '2s' });
    await waitUntil(async () => steps.includes(`${held}:one`), Boolean, 60_000, 'the first step to start');
    await workflows.stop();
    const service = env.client.workflowService;
    const poll = env.client.connection.withDeadline(Date.now() + 70_000, () =>
      service.pollWorkflowTaskQueue({ namespace: env.namespace, taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, identity: 'the test, holding a task' }),
    );
    releaseFirst();
    const task = await poll;
    expect(task.workflowExecution?.workflowId).toBe(held);
    const update = heldRun.startUpdate(noteUpdate, { args: ['note while held'], waitForStage: WorkflowUpdateStage.ACCEPTED });
    await waitUntil(async () => (await heldRun.fetchHistory()).events ?? [], (events) => events.some((e) => e.workflowTaskTimedOutEventAttributes), 30_000, 'the held task to time out');
    // The retry, with the update, done by the original code.
    workflows = await workflowsOf(original);
    await (await update).result();
    await waitUntil(async () => steps.includes(`${held}:two`), Boolean, 60_000, 'the held run to reach its second step');
    const before = (await heldRun.fetchHistory()).events ?? [];
    const retried = before.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).map((e) => Number(e.eventId));
    expect(retried).toHaveLength(1);

    // A deploy whose code disagrees with both histories at the second step: every task of both fails.
    await workflows.stop();
    await workflowsOf(changed);
    const poke = (run: typeof heldRun) => run.signal('poke').catch(() => undefined);
    await Promise.all([poke(heldRun), poke(plainRun)]);
    const lines: string[] = [];
    const sweep = startReplayRepairSweep({ client: env.client, taskQueue, replay: async () => ({ workflowBundle: changed }), intervalMs: 0, log: (line) => lines.push(line) });
    const found: Awaited<ReturnType<typeof sweep.once>> = [];
    await waitUntil(
      async () => {
        found.push(...(await sweep.once()));
        return found;
      },
      (done) => done.some((d) => d.workflowId === held) && done.some((d) => d.workflowId === plain),
      120_000,
      'the server to mark both runs and the sweep to find them',
    ).catch(async (error: unknown) => {
      for (const e of (await heldRun.fetchHistory()).events ?? []) console.log('held run history:', String(e.eventId), e.eventType, e.activityTaskScheduledEventAttributes?.activityType?.name ?? '', e.workflowTaskFailedEventAttributes?.failure?.message ?? '');
      throw error;
    });
    const outcomeOf = (workflowId: string) => found.find((d) => d.workflowId === workflowId)?.outcome;
    expect(outcomeOf(held)?.kind).toBe('reset');
    const left = outcomeOf(plain);
    expect(left?.kind === 'left' && left.reason).toMatch(/accepted no update/);
    expect(lines.join('\n')).toMatch(new RegExp(`repaired ${held}`));
    expect(lines.join('\n')).toMatch(new RegExp(`${plain} .*not repaired automatically: .*accepted no update`));

    // The new run goes on with the changed code: the note that came while its task was held is
    // there again, and it finishes.
    const latest = env.client.workflow.getHandle<typeof repairWorkflow>(held);
    await latest.executeUpdate(noteUpdate, { args: ['done'] });
    // (The re-applied note and the first step's result arrive in one task; the SDK orders them.)
    const notes = await latest.result();
    // The new run's history says who reset it and why: a later repair counts it (at most 5 a run).
    expect(historyMarks((await latest.fetchHistory()).events ?? []).filter((m) => m.kind === 'repair-reset')).toHaveLength(1);
    expect([...notes].sort()).toEqual(['done', 'note while held', 'step one', 'step two']);
    // The first step's result was kept: it ran once. The second was scheduled by the task the
    // reset drops, so the new run schedules it again, with the same activity id: Keel's tools
    // answer such a repeat from their records (activities/tools/ledger.ts), this test's step runs.
    expect(steps.filter((s) => s === `${held}:one`)).toHaveLength(1);
    expect(steps.filter((s) => s === `${held}:two`)).toHaveLength(2);
    sweep.stop();

    // `keel repair` on the run left alone: the CLI replays it with Keel's own workflows (the
    // run's bundle), which do not have this fixture's type, so it refuses, says why, exits 1.
    const cli = await keel(['repair', plain, '--dry-run', '--json'], { ...cliEnv(taskQueue), KEEL_WORKFLOW_BUNDLE: await keelWorkflowBundleFile() });
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.json()).toMatchObject({ workflowId: plain, kind: 'left', reason: expect.stringMatching(/does not replay, and not for the SDK's known reason/) as unknown });
    await plainRun.terminate('test over');
  }, 300_000);
});
