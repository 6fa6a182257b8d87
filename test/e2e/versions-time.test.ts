// The test of time in simulated days (`npm run test:e2e -- versions-time`): sessions and goals
// started on today's build live through three later builds while days pass between them, on
// Temporal's time-skipping test server. That server has no Worker Versioning
// ("UNIMPLEMENTED: Worker Versioning not yet supported in test server"), so here every build is
// an unversioned worker on the same task queue, run one after another (build N stopped, its
// sticky cache gone, build N+1 started and replaying every open run from its history), and
// each code change must be one that old histories replay with — behind `patched()`:
//   build-1    today's workflows
//   build-2    other code, the same commands (test/fixtures/versions/build-2.ts)
//   patched-3  a timer at the start of every new run, behind a patch (versions/patched-3.ts)
//   patched-4  and a timer at the end of every session and goal, behind another (patched-4.ts)
// What is alive across them, for days of workflow time:
//   - a session idle after one turn (idle limit 10 days): answered on the last build;
//   - a session idle after one turn whose idle limit (2.5 days) falls while build-2 runs: it
//     closes then, at its deadline in workflow time, not when a later build starts;
//   - the same with a 2-day limit, in a session that continued as new after its turn (on
//     build 1): its second run re-armed what was left of the timer, which fired on build 2 at
//     the first run's deadline;
//   - a session mid-turn, its command waiting for approval (approval limit 10 days): approved
//     on the last build, the command runs once;
//   - a goal waiting for its plan's approval (limit 10 days): approved on the last build, its
//     tasks run there, each command once;
//   - a goal whose plan approval limit (4 days) expires while patched-3 runs: it stops by the
//     goal's rule ("no one approved the plan in time") at its deadline.
// After each build starts, every open run is sent the deploy step's no-op nudge
// (`keelUpgradeNudge`): its workflow task makes the new build replay the run's whole history
// (the check for nondeterminism). The dev-server version with Worker Deployment Versioning is
// versions.test.ts.
import { Buffer } from 'node:buffer';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { temporalServers } from '../helpers/temporal-servers';
import { KeelClient } from '../../client/index';
import { startStandin } from '../../standin/server';
import { UPGRADE_NUDGE } from '../../workflows/versioning';
import { createKeelWorker, type KeelWorker } from '../../worker/worker';
import { eventsQuery, goalEventsQuery, stateQuery } from '../../workflows/definitions';
import { keelSearchAttributes } from '../../workflows/search-attributes';
import { bundle, uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';
import { agent, critic, finish, plan, planner, review, task } from '../fixtures/goal-harness';
import { KEY, makeWorkspace, say, use, waitUntil } from '../fixtures/session-harness';
import { PATCH_START } from '../fixtures/versions/patched-3';
import { PATCH_END } from '../fixtures/versions/patched-4';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => path.join(here, '../fixtures/versions', `${name}.ts`);
const { workflowBundle } = useTemporal();

const DAY = 86_400_000;
const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);

interface Build {
  readonly id: string;
  readonly bundle: WorkflowBundleWithSourceMap;
}

/** Every run of a workflow id, oldest first (a run that continued as new names the one before it). */
async function historiesOf(client: Client, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined;
  for (;;) {
    const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) return runs;
    runId = previous;
  }
}

/** The patch ids of a history's markers (the SDK's `core_patch` markers carry `{ id, deprecated }` as a JSON payload). */
function patchMarkers(events: readonly HistoryEvent[]): string[] {
  return events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => {
      const data = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
      return data ? String((JSON.parse(Buffer.from(data).toString('utf8')) as { id?: unknown }).id) : '?';
    });
}

/** The worker code (binary checksum: the SDK's version and the bundle's hash) of each completed workflow task, with its workflow time. */
const completions = (events: readonly HistoryEvent[]) =>
  events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).map((e) => ({ id: Number(e.eventId), at: ms(e.eventTime), checksum: e.workflowTaskCompletedEventAttributes?.binaryChecksum ?? '' }));

describe('sessions and goals across three later builds, days of workflow time apart (time-skipping server)', () => {
  it('all complete on the newest build at the right workflow times: 0 lost, 0 nondeterminism, no command twice', async () => {
    const builds: Build[] = [
      { id: 'build-1', bundle: workflowBundle },
      { id: 'build-2', bundle: await bundle(fixture('build-2')) },
      { id: 'patched-3', bundle: await bundle(fixture('patched-3')) },
      { id: 'patched-4', bundle: await bundle(fixture('patched-4')) },
    ];
    const started = Date.now();
    const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: temporalServers().testServerPath } } });
    const namespace = env.namespace ?? 'default';
    // The dev server gets Keel's search attributes as start flags (worker/search-attributes.ts); this one through the operator API.
    const indexed = { KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, INT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT } as const;
    await env.connection.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(keelSearchAttributes.map((k) => [k.name, indexed[k.type]])) });
    const standin = await startStandin({
      scenario: {
        rules: [
          { name: 'plan-wait', match: planner({ lastUserContains: 'two steps' }), reply: plan([task('t1', 'first step', 'run step one'), task('t2', 'second step', 'run step two')]) },
          { name: 'plan-expire', match: planner({ lastUserContains: 'nobody approves' }), reply: plan([task('x1', 'never', 'never runs')]) },
          { name: 'review', match: critic(), reply: review('pass', 'both steps ran') },
          { name: 't1-command', match: agent('t1', { hasToolResults: false }), reply: use('run_command', { command: 'echo t1 >> ledger.txt' }) },
          { name: 't2-command', match: agent('t2', { hasToolResults: false }), reply: use('run_command', { command: 'echo t2 >> ledger.txt' }) },
          { name: 't1-done', match: agent('t1', { hasToolResults: true }), reply: finish('step one ran') },
          { name: 't2-done', match: agent('t2', { hasToolResults: true }), reply: finish('step two ran') },
          { name: 'hello', match: { lastUserContains: 'hello', hasToolResults: false }, reply: say('hi') },
          { name: 's1-command', match: { lastUserContains: 'first command', hasToolResults: false }, reply: use('run_command', { command: 'echo s1 >> ledger.txt' }, 'toolu_s1') },
          { name: 'still', match: { lastUserContains: 'still there', hasToolResults: false }, reply: say('still here') },
          { name: 'ran', match: { hasToolResults: true }, reply: say('ran it') },
        ],
      },
    });
    const workspace = await makeWorkspace('keel-versions-time-');
    const taskQueue = uniqueTaskQueue('versions-time');
    const client = env.client;
    const log = (line: string) => console.log(`versions-time: ${line}`);
    let worker: { keel: KeelWorker; running: Promise<void> } | null = null;
    /** Each build's worker code as its workflow tasks record it, and the workflow-time window it ran in. */
    const ran: { build: string; checksum: string; from: number; to: number }[] = [];

    async function startWorker(build: Build): Promise<void> {
      const keel = await createKeelWorker({
        connection: env.nativeConnection,
        namespace,
        taskQueue,
        workflowBundle: build.bundle,
        workflowsOnCallingThread: true,
        // No workflow cache, so no sticky queue: this server implements neither ShutdownWorker nor
        // ResetStickyTaskQueue, and a stopped build's sticky queue kept its runs' next tasks
        // (a nudge unanswered for a minute). Every task is then replayed from the whole history
        // by the build that takes it — the strictest check of what each build does with it.
        workflowCache: { maxCachedWorkflows: 0 },
        env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standin.url, KEEL_REPAIR_SWEEP_SECONDS: '0' },
        log: () => {},
      });
      worker = { keel, running: keel.run() };
      ran.push({ build: build.id, checksum: '', from: await env.currentTimeMs(), to: Number.POSITIVE_INFINITY });
      log(`${build.id} started`);
    }
    async function stopWorker(): Promise<void> {
      if (worker === null) return;
      worker.keel.worker.shutdown();
      await worker.running;
      worker = null;
      if (ran.at(-1)!.to === Number.POSITIVE_INFINITY) ran.at(-1)!.to = await env.currentTimeMs();
      log(`${ran.at(-1)!.build} stopped`);
    }

    try {
      await startWorker(builds[0]!);
      const keel = await KeelClient.connect({ client, taskQueue });
      // Build 1: three sessions take a turn and wait for a person (two with an idle limit that falls during the days), one waits for an approval mid-turn, two goals for their plan's approval.
      const idle = await keel.startSession({ workspace, policy: { mode: 'ask' }, idleTimeoutMs: 10 * DAY });
      const expiring = await keel.startSession({ workspace, policy: { mode: 'ask' }, idleTimeoutMs: 2.5 * DAY });
      // The same, but it continues as new after its turn (still on build 1): the next run re-arms what was left of its idle timer.
      const moved = await keel.startSession({ workspace, policy: { mode: 'ask' }, idleTimeoutMs: 2 * DAY, continueAsNewAfterTurns: 1 });
      const midTurn = await keel.startSession({ workspace, policy: { mode: 'ask' }, approvalTimeoutMs: 10 * DAY });
      const goal = await keel.startGoal('run the two steps', { workspace, policy: { mode: 'full-auto' }, maxConcurrency: 1, planApprovalTimeoutMs: 10 * DAY });
      const unapproved = await keel.startGoal('a plan nobody approves', { workspace, policy: { mode: 'full-auto' }, planApprovalTimeoutMs: 4 * DAY });
      const t0 = await env.currentTimeMs();
      const turns: string[] = [(await idle.send('hello')).output ?? ''];
      await expiring.send('hello');
      await moved.send('hello');
      await waitUntil(async () => (await historiesOf(client, moved.id)).length, (n) => n === 2, 60_000, 'the session continued as new after its turn');
      const firstCommand = await midTurn.post('first command');
      await waitUntil(() => midTurn.workflowHandle.query(stateQuery), (s) => s.pendingApprovals.length === 1, 60_000, 'the command waiting for approval');
      for (const g of [goal, unapproved]) await waitUntil(() => g.state(), (s) => s.status === 'awaiting_plan_approval', 60_000, `${g.id}: plan waiting for approval`);
      const everyId = [idle.id, expiring.id, moved.id, midTurn.id, goal.id, unapproved.id];
      ran[0]!.checksum = completions((await historiesOf(client, idle.id)).at(-1)!).at(-1)!.checksum;

      const open = async () => {
        const ids: string[] = [];
        for (const id of everyId) if ((await client.workflow.getHandle(id).describe()).status.name === 'RUNNING') ids.push(id);
        return ids;
      };
      /** Stops the running build, starts the next, and makes it replay every open run (a nudge gives each a workflow task). */
      async function deploy(build: Build): Promise<void> {
        await stopWorker();
        await startWorker(build);
        for (const id of await open()) {
          const before = completions((await historiesOf(client, id)).at(-1)!).length;
          await client.workflow.getHandle(id).signal(UPGRADE_NUDGE);
          const after = await waitUntil(
            async () => {
              const events = (await historiesOf(client, id)).at(-1)!;
              // A build that disagrees with the history fails the task (and the next, and the next): say so at once.
              const failed = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
              if (failed) throw new Error(`${id} on ${build.id}: workflow task failed: ${failed.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`);
              return completions(events);
            },
            (c) => c.length > before,
            60_000,
            `${id} replayed on ${build.id}`,
          );
          const checksum = after.at(-1)!.checksum;
          if (ran.at(-1)!.checksum === '') ran.at(-1)!.checksum = checksum;
          else if (ran.at(-1)!.checksum !== checksum) throw new Error(`${build.id}: two worker checksums, ${ran.at(-1)!.checksum} and ${checksum}`);
        }
        log(`${build.id} replayed ${(await open()).length} open runs`);
      }
      const days = async (n: number) => {
        await env.sleep(n * DAY);
        log(`${n} days later: ${((await env.currentTimeMs()) - t0) / DAY} days since the start`);
      };

      await days(1);
      await deploy(builds[1]!);
      // Build 2 runs from day 1 to day 3: the 2.5-day idle limit falls in it.
      await days(2);
      await deploy(builds[2]!);
      // patched-3 runs from day 3 to day 5: the 4-day plan approval limit falls in it.
      await days(2);
      await deploy(builds[3]!);
      await days(1);

      // Build 4, day 6: the idle session is answered, the command approved, the plan approved.
      turns.push((await idle.send('still there?')).output ?? '');
      await midTurn.approve('toolu_s1');
      const commandTurn = await midTurn.turnOf(firstCommand.messageId);
      await goal.approvePlan();
      await waitUntil(() => goal.state(), (s) => s.status === 'goal_met' || s.status === 'stopped', 120_000, 'the goal finished');
      await idle.close('done');
      await midTurn.close('done');
      for (const id of everyId) await waitUntil(() => client.workflow.getHandle(id).describe(), (d) => d.status.name !== 'RUNNING', 60_000, `${id} closed`);
      // (Asking for a result lets this server skip time, and it does — years, for a run of its own: the last build's window ends here.)
      ran.at(-1)!.to = await env.currentTimeMs();
      const results = { idle: await idle.result(), expiring: await expiring.result(), moved: await moved.result(), midTurn: await midTurn.result(), goal: await goal.result(), unapproved: await unapproved.result() };
      const logs = {
        idle: (await idle.workflowHandle.query(eventsQuery, { from: 0, limit: 500 })).entries,
        expiring: (await expiring.workflowHandle.query(eventsQuery, { from: 0, limit: 500 })).entries,
        moved: (await moved.workflowHandle.query(eventsQuery, { from: 0, limit: 500 })).entries,
        midTurn: (await midTurn.workflowHandle.query(eventsQuery, { from: 0, limit: 500 })).entries,
        goal: (await client.workflow.getHandle(goal.id).query(goalEventsQuery, { from: 0, limit: 500 })).entries,
        unapproved: (await client.workflow.getHandle(unapproved.id).query(goalEventsQuery, { from: 0, limit: 500 })).entries,
      };
      await stopWorker();
      log(`${Date.now() - started} ms in all; builds ${ran.map((r) => `${r.build} days ${((r.from - t0) / DAY).toFixed(2)}-${((r.to - t0) / DAY).toFixed(2)} ${r.checksum.slice(-12)}`).join(', ')}`);

      // Every workflow of the run: the five, and the goal's agents (its children).
      const histories = new Map<string, HistoryEvent[][]>();
      for (const id of everyId) histories.set(id, await historiesOf(client, id));
      for (const events of histories.get(goal.id)!.flat()) {
        const child = events.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
        if (child) histories.set(child, await historiesOf(client, child));
      }
      const agentIds = [...histories.keys()].filter((id) => !everyId.includes(id));

      // 0 nondeterminism: no workflow task failed in any history.
      const failures = [...histories].flatMap(([id, runs]) => runs.flat().filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).map((e) => `${id}: ${e.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`));
      expect(failures).toEqual([]);
      // Each build ran with its own code (four checksums), and each run started on build 1 had a task on every build up to its end.
      const checksums = ran.map((r) => r.checksum);
      expect(new Set(checksums).size).toBe(4);
      const buildOf = (checksum: string) => ran.find((r) => r.checksum === checksum)?.build ?? `unknown ${checksum}`;
      const buildsOf = (id: string) => [...new Set(histories.get(id)!.flatMap((run) => completions(run).map((c) => buildOf(c.checksum))))];
      for (const id of [idle.id, midTurn.id, goal.id]) expect(buildsOf(id), id).toEqual(['build-1', 'build-2', 'patched-3', 'patched-4']);
      expect(buildsOf(expiring.id)).toEqual(['build-1', 'build-2']);
      expect(buildsOf(moved.id)).toEqual(['build-1', 'build-2']);
      expect(buildsOf(unapproved.id)).toEqual(['build-1', 'build-2', 'patched-3']);
      for (const id of agentIds) expect(buildsOf(id), id).toEqual(['patched-4']);
      expect(agentIds).toHaveLength(2);

      // All complete on the newest build; nothing lost.
      expect(turns).toEqual(['hi', 'still here']);
      expect(commandTurn.output).toBe('ran it');
      expect(results.idle.outcome).toBe('closed');
      expect(results.midTurn.outcome).toBe('closed');
      expect(results.goal.verdict).toBe('goal_met');
      expect(results.goal.tasks.map((t) => [t.id, t.status])).toEqual([['t1', 'succeeded'], ['t2', 'succeeded']]);
      const kinds = (entries: readonly { kind: string }[]) => entries.map((e) => e.kind);
      expect(kinds(logs.idle).filter((k) => k === 'turn.completed')).toHaveLength(2);
      for (const k of ['tool.approval_requested', 'tool.approved', 'tool.result', 'turn.completed', 'session.closed']) expect(kinds(logs.midTurn), k).toContain(k);
      for (const k of ['plan.approval_requested', 'plan.approved', 'plan.task_completed', 'plan.goal_met']) expect(kinds(logs.goal), k).toContain(k);
      expect(kinds(logs.goal).filter((k) => k === 'plan.task_completed')).toHaveLength(2);

      // No command twice: the ledger has each line once, and each tool call was asked of the model once.
      expect((await fs.readFile(path.join(workspace, 'ledger.txt'), 'utf8')).trim().split('\n').sort()).toEqual(['s1', 't1', 't2']);
      const asked = (rule: string) => standin.requests.filter((r) => r.rule === rule).length;
      for (const rule of ['s1-command', 't1-command', 't2-command', 'plan-wait', 'plan-expire', 'hello', 'still']) expect(asked(rule), rule).toBe(rule === 'hello' ? 3 : 1);

      // The days passed: the idle session's last turn came six days after its first, in workflow time.
      const idleTasks = histories.get(idle.id)!.flatMap(completions);
      expect(idleTasks.at(-1)!.at - t0).toBeGreaterThanOrEqual(6 * DAY);

      // The idle limit that fell on build 2 was honoured then: its timer fired 2.5 days after it
      // was armed, the session closed ("timeout") in that task, on build 2.
      const expiringEvents = histories.get(expiring.id)!.flat();
      /** The timer of that duration that fired (an idle timer is armed again at each transition while waiting; the earlier ones were cancelled). */
      const timer = (events: HistoryEvent[], durationMs: number) => {
        const firedOf = (started: HistoryEvent) => events.find((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED && e.timerFiredEventAttributes?.timerId === started.timerStartedEventAttributes?.timerId);
        const armed = events.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED && ms(e.timerStartedEventAttributes?.startToFireTimeout) === durationMs);
        const startedEvent = armed.find((e) => firedOf(e) !== undefined);
        if (startedEvent === undefined) throw new Error(`no timer of ${durationMs} ms fired (${armed.length} armed)`);
        const fired = firedOf(startedEvent)!;
        return { armed: ms(startedEvent.eventTime), fired: ms(fired.eventTime), firedId: Number(fired.eventId) };
      };
      const idleTimer = timer(expiringEvents, 2.5 * DAY);
      expect(idleTimer.fired - idleTimer.armed).toBeGreaterThanOrEqual(2.5 * DAY);
      expect(idleTimer.fired - idleTimer.armed).toBeLessThan(2.5 * DAY + 60_000);
      expect(results.expiring.outcome).toBe('closed');
      expect(results.expiring.reason).toBe('timeout');
      const closed = logs.expiring.find((e) => e.kind === 'session.closed')!;
      expect(Math.abs(Date.parse(closed.at) - idleTimer.fired)).toBeLessThan(60_000);
      expect(buildOf(completions(expiringEvents).find((c) => c.id > idleTimer.firedId)!.checksum)).toBe('build-2');

      // The session that continued as new on build 1: its second run re-armed the idle timer with
      // what was left of the 2 days, and it fired on build 2 at the first run's deadline.
      const [movedFirst, movedSecond] = histories.get(moved.id)!;
      expect(histories.get(moved.id)).toHaveLength(2);
      const idleArmedFirst = movedFirst!.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED && ms(e.timerStartedEventAttributes?.startToFireTimeout) === 2 * DAY).at(-1)!;
      const deadline = ms(idleArmedFirst.eventTime) + 2 * DAY;
      const rearmed = movedSecond!.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED && ms(e.timerStartedEventAttributes?.startToFireTimeout) > DAY);
      expect(rearmed).toHaveLength(1);
      expect(ms(rearmed[0]!.timerStartedEventAttributes?.startToFireTimeout)).toBeLessThan(2 * DAY);
      const movedFired = movedSecond!.find((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED && e.timerFiredEventAttributes?.timerId === rearmed[0]!.timerStartedEventAttributes?.timerId)!;
      expect(Math.abs(ms(movedFired.eventTime) - deadline)).toBeLessThan(60_000);
      expect(results.moved.reason).toBe('timeout');
      expect(Math.abs(Date.parse(logs.moved.find((e) => e.kind === 'session.closed')!.at) - deadline)).toBeLessThan(60_000);
      expect(buildOf(completions(movedSecond!).find((c) => c.id > Number(movedFired.eventId))!.checksum)).toBe('build-2');

      // The waits that were answered on the last build lasted the days: the command's approval and the plan's.
      const at = (entries: readonly { kind: string; at: string }[], kind: string) => Date.parse(entries.find((e) => e.kind === kind)!.at);
      expect(at(logs.midTurn, 'tool.approved') - at(logs.midTurn, 'tool.approval_requested')).toBeGreaterThan(6 * DAY - 60_000);
      expect(at(logs.goal, 'plan.approved') - at(logs.goal, 'plan.approval_requested')).toBeGreaterThan(6 * DAY - 60_000);

      // The plan approval limit that fell on patched-3: the goal stopped by its rule, 4 days after the plan waited.
      const unapprovedEvents = histories.get(unapproved.id)!.flat();
      const approvalTimer = timer(unapprovedEvents, 4 * DAY);
      expect(approvalTimer.fired - approvalTimer.armed).toBeLessThan(4 * DAY + 60_000);
      expect(results.unapproved.verdict).toBe('stopped');
      expect(results.unapproved.summary).toBe('no one approved the plan in time');
      const stopped = logs.unapproved.find((e) => e.kind === 'plan.stopped')!;
      expect(Math.abs(Date.parse(stopped.at) - approvalTimer.fired)).toBeLessThan(60_000);
      expect(buildOf(completions(unapprovedEvents).find((c) => c.id > approvalTimer.firedId)!.checksum)).toBe('patched-3');

      // The patches: runs that began on build 1 replayed without the start timer (no marker) and
      // ended through patched-4's new branch (its marker); the agents, started on patched-4, have the start timer's.
      for (const id of [idle.id, midTurn.id, goal.id]) expect(patchMarkers(histories.get(id)!.flat()).filter((p) => p.startsWith('time-test')), id).toEqual([PATCH_END]);
      for (const id of [expiring.id, moved.id, unapproved.id]) expect(patchMarkers(histories.get(id)!.flat()).filter((p) => p.startsWith('time-test')), id).toEqual([]);
      for (const id of agentIds) expect(patchMarkers(histories.get(id)!.flat()).filter((p) => p.startsWith('time-test')), id).toEqual([PATCH_START]);
    } finally {
      await stopWorker().catch(() => undefined);
      await standin.close();
      await env.teardown();
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });
});
