// The scenarios of `npm run bench`. Each runs one variant's workload once (a "phase") and
// returns what it measured; bench/suite.ts interleaves variants in rounds.
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Standin } from '../../standin/server';
import { countEvents, mapLimit, type Phase, type Pids, since, snapshot, workflowTaskTimes } from './measure';
import { rssMiB } from './proc';
import { type BilledRequest, bestPlacement, mainPlacement, replay, sessionCost, withoutBreakpoints } from './cost';
import { compactionCost } from './compaction-cost';
import { type LimitKind, overshoot, type Overshoot } from './budget-overshoot';
import type { RecordedRequest } from '../../standin/server';
import { BENCH_MODEL, benchScenario, costScenario, costTurnText, goalCostScenario, longReadScenario, longTurnText, responsiveApproveText, responsiveFastText, responsiveScenario, responsiveSlowText, turnText, writeCostFiles, writeGoalFiles, writeLongFiles } from './script';
import { KeelClient } from '../../client/keel-client';
import { percentile } from './stats';
import { startServer } from '../../server/main';
import { DELTA_PATHS, type DeltaPath, runPathTurn } from './first-delta';
import { checkFinal, isKeel, startSession, type BenchSession, type VariantName, type VariantWorker } from './variants';
import { FLOOR_INTERRUPTED, floorInterruptUpdate, floorPostUpdate, floorStateQuery } from '../floor/workflows';

export const SCENARIOS = ['single', 'concurrent', 'parked', 'long', 'stream', 'first-delta', 'responsive', 'cost'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface Sizes {
  /** single: steps in the one turn, and how many such turns. */
  singleSteps: number;
  singleTurns: number;
  /** concurrent: sessions × turns × steps. */
  sessions: number;
  turns: number;
  steps: number;
  /** parked: sessions left parked after one turn each. */
  parked: number;
  /** long: turns of one step in one session, continue-as-new every `longCanEvery` (null: when the server suggests). */
  longTurns: number;
  longCanEvery: number | null;
  /** long: 0 for one-step turns; else each turn reads a file of this many bytes (two steps a turn). */
  longOutputBytes?: number;
  /** stream: sessions streaming at once, turns each, ms between deltas. */
  streamSessions: number;
  streamTurns: number;
  streamDelayMs: number;
  /** first-delta: sessions at once, turns each (the paths take turns: each session's turn t goes by path (session + t) mod 3). */
  firstDeltaSessions: number;
  firstDeltaTurns: number;
  /** responsive: one session, then this many at once, each running `responsiveTrials` interrupted turns. */
  responsiveSessions: number;
  responsiveTrials: number;
  /** cost: turns of the one session (a file of 2–20 KB read in each), and tasks of the goal. */
  costTurns: number;
  costGoalTasks: number;
  /** cost: turns of the compacting session, and the size above which it compacts. */
  compactTurns: number;
  compactAboveTokens: number;
}

export const FULL: Sizes = { singleSteps: 10, singleTurns: 3, sessions: 50, turns: 5, steps: 3, parked: 10_000, longTurns: 2_000, longCanEvery: null, streamSessions: 10, streamTurns: 5, streamDelayMs: 20, firstDeltaSessions: 3, firstDeltaTurns: 12, responsiveSessions: 50, responsiveTrials: 4, costTurns: 20, costGoalTasks: 5, compactTurns: 60, compactAboveTokens: 40_000 };
export const QUICK: Sizes = { singleSteps: 5, singleTurns: 2, sessions: 10, turns: 2, steps: 3, parked: 200, longTurns: 60, longCanEvery: 20, streamSessions: 10, streamTurns: 2, streamDelayMs: 20, firstDeltaSessions: 3, firstDeltaTurns: 6, responsiveSessions: 10, responsiveTrials: 3, costTurns: 20, costGoalTasks: 5, compactTurns: 60, compactAboveTokens: 40_000 };

/** Which variants each scenario compares (the others have nothing to say there). */
export const SCENARIO_VARIANTS: Record<ScenarioName, readonly VariantName[]> = {
  single: ['floor', 'floor-local', 'keel', 'keel-pg', 'ai-sdk', 'ai-sdk-stream', 'openai-agents'],
  concurrent: ['floor', 'floor-local', 'keel', 'keel-pg', 'ai-sdk', 'ai-sdk-stream', 'openai-agents'],
  parked: ['floor', 'keel'],
  long: ['floor', 'floor-local', 'keel'],
  stream: ['keel'],
  'first-delta': ['keel'],
  responsive: ['floor', 'keel'],
  cost: ['keel'],
};

export interface Context {
  client: Client;
  serverPid: number;
  standin: Standin;
  workspace: string;
  sizes: Sizes;
  /** Records something the results must say (a failure that did not stop the phase). */
  note(line: string): void;
  /** Restarts a variant's worker (parked sessions are measured on a fresh one). */
  restart(worker: VariantWorker): Promise<void>;
}

/** The bench's own API token for `keel serve` in its process (the first-delta scenario). */
const BENCH_API_TOKEN = 'keel_bench_token_0123456789abcdef';

let serial = 0;
const newId = (variant: VariantName, scenario: string) => `bench-${scenario}-${variant}-${Date.now().toString(36)}-${serial++}`;

async function runTurns(session: BenchSession, variant: VariantName, turns: number, steps: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let t = 0; t < turns; t++) {
    const started = performance.now();
    checkFinal(variant, await session.turn(turnText(steps, `${session.id} turn ${t + 1}`)));
    latencies.push(performance.now() - started);
  }
  return latencies;
}

function phase(base: Omit<Phase, 'eventsTotal'>): Phase {
  return { ...base, eventsTotal: Object.values(base.events).reduce((a, b) => a + b, 0) };
}

export async function runScenario(name: ScenarioName, ctx: Context, worker: VariantWorker, round: number): Promise<Phase> {
  const pids: Pids = { worker: worker.pid, server: ctx.serverPid };
  const variant = worker.name;
  const s = ctx.sizes;
  switch (name) {
    case 'single':
    case 'concurrent': {
      const [sessions, turns, steps] = name === 'single' ? [1, s.singleTurns, s.singleSteps] : [s.sessions, s.turns, s.steps];
      ctx.standin.setScenario(benchScenario([steps]));
      const calls = ctx.standin.requests.length;
      const before = snapshot(pids);
      const started = await mapLimit(Array.from({ length: sessions }), sessions, () => startSession(ctx.client, worker, newId(variant, name), ctx.workspace));
      const latencies = (await settled(started.map((session) => runTurns(session, variant, turns, steps)))).flat();
      const used = since(before, pids);
      await Promise.all(started.map((session) => session.close()));
      const events = await countEvents(ctx.client, started.map((x) => x.id));
      return phase({
        scenario: name,
        round,
        variant,
        steps: sessions * turns * steps,
        modelCalls: ctx.standin.requests.length - calls,
        ...used,
        events,
        extra: { turnP50Ms: percentile(latencies, 50), turnP95Ms: percentile(latencies, 95), turnMaxMs: Math.max(...latencies) },
      });
    }
    case 'parked': {
      // A fresh worker, so its memory is what the parked sessions hold.
      await ctx.restart(worker);
      const fresh: Pids = { worker: worker.pid, server: ctx.serverPid };
      ctx.standin.setScenario(benchScenario([1], s.streamDelayMs));
      await new Promise((r) => setTimeout(r, 2_000));
      const workerBefore = rssMiB(fresh.worker);
      const serverBefore = rssMiB(fresh.server);
      const calls = ctx.standin.requests.length;
      const before = snapshot(fresh);
      const sessions = await mapLimit(Array.from({ length: s.parked }), 50, async () => {
        const session = await startSession(ctx.client, worker, newId(variant, name), ctx.workspace);
        checkFinal(variant, await session.turn(turnText(1, `${session.id} park`)));
        return session;
      });
      const used = since(before, fresh);
      await new Promise((r) => setTimeout(r, 2_000));
      const workerAfter = rssMiB(fresh.worker);
      const serverAfter = rssMiB(fresh.server);
      // A message to a parked (cached) session: how long until its turn is done, and for
      // Keel until the first model delta reaches a client.
      const wake = async (probe: readonly BenchSession[], label: string) => {
        const turnMs: number[] = [];
        const firstDeltaMs: number[] = [];
        for (const session of probe) {
          const from = session.keel ? await session.keel.streamOffset() : 0;
          const t0 = performance.now();
          const first = session.keel ? firstModelDelta(session, from, t0) : null;
          // If the turn below throws, this follower is never awaited: its failure must not
          // become an unhandled rejection that ends the bench.
          first?.catch(() => undefined);
          checkFinal(variant, await session.turn(turnText(1, `${session.id} ${label}`)));
          turnMs.push(performance.now() - t0);
          if (first) firstDeltaMs.push(await first);
        }
        return { turnMs, firstDeltaMs };
      };
      const cached = await wake(sessions.slice(0, 20), 'wake');
      // After eviction: a new worker process has none of them cached, so each message
      // replays its session's history first. One message warms the new worker up.
      await ctx.restart(worker);
      // A failure here is a finding about replay, not a reason to lose the memory figures.
      let evicted: { turnMs: number[]; firstDeltaMs: number[] } = { turnMs: [], firstDeltaMs: [] };
      let evictedFailures = 0;
      try {
        await wake(sessions.slice(20, 21), 'warm');
        evicted = await wake(sessions.slice(21, 41), 'wake after eviction');
      } catch (error) {
        evictedFailures++;
        ctx.note(`parked round ${round + 1} ${variant}: a message after eviction failed: ${(error as Error).message}${(error as Error).cause instanceof Error ? ` (${((error as Error).cause as Error).message})` : ''}`);
      }
      const events = await countEvents(ctx.client, sessions.slice(0, 20).map((x) => x.id));
      await mapLimit(sessions, 50, (session) => session.close());
      return phase({
        scenario: name,
        round,
        variant,
        steps: s.parked,
        modelCalls: ctx.standin.requests.length - calls,
        ...used,
        workerRssMiB: workerAfter,
        serverRssMiB: serverAfter,
        events,
        extra: {
          parkedSessions: s.parked,
          workerKiBPerParked: ((workerAfter - workerBefore) * 1024) / s.parked,
          serverKiBPerParked: ((serverAfter - serverBefore) * 1024) / s.parked,
          evictedFailures,
          cachedTurnP50Ms: percentile(cached.turnMs, 50),
          evictedTurnP50Ms: percentile(evicted.turnMs, 50),
          ...(cached.firstDeltaMs.length
            ? {
                cachedFirstDeltaP50Ms: percentile(cached.firstDeltaMs, 50),
                cachedFirstDeltaP95Ms: percentile(cached.firstDeltaMs, 95),
                evictedFirstDeltaP50Ms: percentile(evicted.firstDeltaMs, 50),
                evictedFirstDeltaP95Ms: percentile(evicted.firstDeltaMs, 95),
              }
            : {}),
        },
      });
    }
    case 'long': {
      const reads = (s.longOutputBytes ?? 0) > 0;
      if (reads) await writeLongFiles(ctx.workspace, s.longTurns, s.longOutputBytes!);
      ctx.standin.setScenario(reads ? longReadScenario(s.longTurns) : benchScenario([1]));
      const stepsPerTurn = reads ? 2 : 1;
      const calls = ctx.standin.requests.length;
      const keelOptions = isKeel(variant) && s.longCanEvery !== null ? { continueAsNewAfterTurns: s.longCanEvery } : {};
      const before = snapshot(pids);
      const session = await startSession(ctx.client, worker, newId(variant, name), ctx.workspace, keelOptions);
      const latencies: number[] = [];
      const runs = new Set<string>();
      const canTurns: number[] = [];
      // Worker+server CPU at each turn's end: the first and the last WINDOW turns, per step, say
      // whether a turn costs more late in a session than early (issue 53: flat over its life).
      const cpuAt: number[] = [];
      const cpuNow = () => {
        const now = snapshot(pids);
        return now.workerCpuMs + now.serverCpuMs;
      };
      cpuAt.push(cpuNow());
      const turnTimes = [turnClock()];
      for (let t = 0; t < s.longTurns; t++) {
        const t0 = performance.now();
        checkFinal(variant, await session.turn(reads ? longTurnText(t + 1, s.longTurns, session.id) : turnText(1, `${session.id} turn ${t + 1}`)));
        latencies.push(performance.now() - t0);
        cpuAt.push(cpuNow());
        turnTimes.push(turnClock());
        if (session.keel) {
          const { runId } = await ctx.client.workflow.getHandle(session.id).describe();
          if (runs.size > 0 && !runs.has(runId)) canTurns.push(t);
          runs.add(runId);
        }
      }
      const used = since(before, pids);
      logTurnTimes(variant, worker.pid, turnTimes);
      await session.close();
      const events = await countEvents(ctx.client, [session.id]);
      // The turns on either side of each continue-as-new.
      const around = canTurns.flatMap((t) => [t - 1, t, t + 1].filter((i) => i >= 0 && i < latencies.length).map((i) => latencies[i]!));
      return phase({
        scenario: name,
        round,
        variant,
        steps: s.longTurns * stepsPerTurn,
        modelCalls: ctx.standin.requests.length - calls,
        ...used,
        events,
        extra: {
          turnP50Ms: percentile(latencies, 50),
          turnP95Ms: percentile(latencies, 95),
          turnMaxMs: Math.max(...latencies),
          turnsOver2s: latencies.filter((x) => x > 2_000).length,
          ...lifeSlope(cpuAt, stepsPerTurn),
          continueAsNews: canTurns.length,
          ...(around.length ? { aroundCanMaxMs: Math.max(...around) } : {}),
        },
      });
    }
    case 'stream': {
      ctx.standin.setScenario(benchScenario([1], s.streamDelayMs));
      const calls = ctx.standin.requests.length;
      const before = snapshot(pids);
      const sessions = await Promise.all(Array.from({ length: s.streamSessions }, () => startSession(ctx.client, worker, newId(variant, name), ctx.workspace)));
      const sentToDelta: number[] = [];
      const requestToDelta: number[] = [];
      await settled(
        sessions.map(async (session) => {
          for (let t = 0; t < s.streamTurns; t++) {
            const tag = `${session.id} stream ${t + 1}`;
            const from = await session.keel!.streamOffset();
            const t0 = performance.now();
            const wall0 = Date.now();
            const first = firstModelDelta(session, from, t0, true);
            checkFinal(variant, await session.turn(turnText(1, tag)));
            const firstAt = await first;
            sentToDelta.push(firstAt);
            // From the stand-in receiving the model request to the client seeing its first
            // delta: what the stream itself adds, whatever queued the call.
            const request = ctx.standin.requests.find((r) => r.facts?.lastUserText.includes(tag));
            if (request) requestToDelta.push(wall0 + firstAt - request.receivedAt);
          }
        }),
      );
      const used = since(before, pids);
      await Promise.all(sessions.map((session) => session.close()));
      const events = await countEvents(ctx.client, sessions.map((x) => x.id));
      return phase({
        scenario: name,
        round,
        variant,
        steps: s.streamSessions * s.streamTurns,
        modelCalls: ctx.standin.requests.length - calls,
        ...used,
        events,
        extra: {
          sentToFirstDeltaP50Ms: percentile(sentToDelta, 50),
          sentToFirstDeltaP95Ms: percentile(sentToDelta, 95),
          requestToFirstDeltaP50Ms: percentile(requestToDelta, 50),
          requestToFirstDeltaP95Ms: percentile(requestToDelta, 95),
        },
      });
    }
    case 'first-delta': {
      // The SDK, SSE and AG-UI side by side on the same kind of turn, in the same rounds: each
      // session's turn t goes by path (session + t) mod 3, so every path sees the same load.
      ctx.standin.setScenario(benchScenario([1], s.streamDelayMs));
      const keel = await KeelClient.connect({ client: ctx.client, taskQueue: worker.taskQueue });
      const server = await startServer({ keel, port: 0, workspace: ctx.workspace, env: { KEEL_API_TOKEN: BENCH_API_TOKEN } });
      const api = { url: server.url, token: BENCH_API_TOKEN };
      const calls = ctx.standin.requests.length;
      const before = snapshot(pids);
      const sessions = await Promise.all(Array.from({ length: s.firstDeltaSessions }, () => startSession(ctx.client, worker, newId(variant, name), ctx.workspace)));
      const sent = Object.fromEntries(DELTA_PATHS.map((p) => [p, [] as number[]])) as Record<DeltaPath, number[]>;
      const request = Object.fromEntries(DELTA_PATHS.map((p) => [p, [] as number[]])) as Record<DeltaPath, number[]>;
      try {
        await settled(
          sessions.map(async (session, i) => {
            for (let t = 0; t < s.firstDeltaTurns; t++) {
              const path = DELTA_PATHS[(i + t) % DELTA_PATHS.length]!;
              const tag = `${session.id} first-delta ${t + 1}`;
              const from = await session.keel!.streamOffset();
              const t0 = performance.now();
              const wall0 = Date.now();
              const turn = await runPathTurn(path, session.keel!, api, turnText(1, tag), `msg-${session.id}-${t}`, from);
              checkFinal(variant, turn.output);
              const firstMs = turn.firstDeltaAt - t0;
              sent[path].push(firstMs);
              const received = ctx.standin.requests.find((r) => r.facts?.lastUserText.includes(tag));
              if (received) request[path].push(wall0 + firstMs - received.receivedAt);
            }
          }),
        );
      } finally {
        await server.close();
      }
      const used = since(before, pids);
      await Promise.all(sessions.map((session) => session.close()));
      const events = await countEvents(ctx.client, sessions.map((x) => x.id));
      const extra: Record<string, number> = {};
      const samples: Record<string, number[]> = {};
      for (const p of DELTA_PATHS) {
        extra[`${p}RequestToFirstDeltaP50Ms`] = percentile(request[p], 50);
        extra[`${p}RequestToFirstDeltaP95Ms`] = percentile(request[p], 95);
        extra[`${p}SentToFirstDeltaP50Ms`] = percentile(sent[p], 50);
        extra[`${p}SentToFirstDeltaP95Ms`] = percentile(sent[p], 95);
        samples[`${p}RequestToFirstDeltaMs`] = request[p];
        samples[`${p}SentToFirstDeltaMs`] = sent[p];
      }
      return {
        ...phase({ scenario: name, round, variant, steps: s.firstDeltaSessions * s.firstDeltaTurns, modelCalls: ctx.standin.requests.length - calls, ...used, events, extra }),
        samples,
      };
    }
    case 'responsive': {
      // Issue 53's "responsive" target: a message and an interrupt answered within 200 ms p99 at
      // one session and 1 s p99 at 50, sent while a model call streams. Each trial: a turn whose
      // model call takes ~3 s; once the stand-in has its request, the bench posts a message
      // (its answer: queued) and interrupts (its answer: taken); the turn ends interrupted and the
      // message gets its own turn. One session alone, then `responsiveSessions` at once, their
      // users acting at different moments of the call (`many`), then all at the same one (`burst`).
      // The floor does the same with bare Temporal (bench/floor/workflows.ts: a `post` and an
      // `interrupt` update, a streamed model call): the least these answers can cost here.
      ctx.standin.setScenario(responsiveScenario());
      const calls = ctx.standin.requests.length;
      const before = snapshot(pids);
      const samples: Record<string, number[]> = {};
      const late: Record<string, number> = {};
      const trial = async (session: ResponsiveSession, t: number, into: string, offsetMs: number) => {
        const tag = `${session.id} responsive ${t}`;
        // Scans only the requests recorded since the last look: fifty sessions scanning every
        // request every few ms took a core of the bench's own process.
        let seen = ctx.standin.requests.length;
        const turn = session.send(responsiveSlowText(tag));
        await until(() => {
          const all = ctx.standin.requests;
          for (; seen < all.length; seen++) if (all[seen]!.facts?.lastUserText.includes(tag)) return true;
          return false;
        }, `the model call of ${tag}`, 10);
        if (offsetMs > 0) await new Promise((r) => setTimeout(r, offsetMs));
        let t0 = performance.now();
        const posted = await session.post(responsiveFastText(tag));
        (samples[`${into}PostMs`] ??= []).push(performance.now() - t0);
        t0 = performance.now();
        await session.interrupt();
        (samples[`${into}InterruptMs`] ??= []).push(performance.now() - t0);
        const outcome = await turn;
        // Answered after the model call had ended: the turn completed (counted; its latency is in the samples).
        if (outcome === 'completed') late[into] = (late[into] ?? 0) + 1;
        else if (outcome !== 'interrupted') throw new Error(`${tag}: the interrupted turn ended ${outcome}`);
        if (!posted) throw new Error(`${tag}: the message was not taken`);
        // The message's own turn runs next; the next trial's model call comes after it.
      };
      // Approve (Keel's; the floor has no approvals): a turn whose write waits for one, timed from
      // the approval sent to its answer; the tool runs after it. Eight at one session; one per
      // session of the `many` group, each user approving at their own moment.
      const approvals = (into: string) => (into === 'one' ? 2 * s.responsiveTrials : into === 'many' ? 1 : 0);
      const approveTrial = async (session: ResponsiveSession, t: number, into: string, offsetMs: number) => {
        const keel = session.bench.keel!;
        const tag = `${session.id} approve ${t}`;
        const turn = keel.send(responsiveApproveText(tag));
        let callId: string | undefined;
        // Each look is a query: fifty sessions look every 100 ms.
        await until(async () => {
          callId = (await keel.state()).pendingApprovals[0]?.callId;
          return callId !== undefined;
        }, `the approval ${tag} asks for`, into === 'one' ? 20 : 100);
        if (offsetMs > 0) await new Promise((r) => setTimeout(r, offsetMs));
        const t0 = performance.now();
        await keel.approve(callId!);
        (samples[`${into}ApproveMs`] ??= []).push(performance.now() - t0);
        const outcome = await turn;
        if (outcome.outcome !== 'completed') throw new Error(`${tag}: the approved turn ended ${outcome.outcome}`);
      };
      const idle = async (session: ResponsiveSession) => {
        // Every 200 ms: each look is a query.
        await until(() => session.idle(), `${session.id} to finish its last message`, 200);
      };
      // `spread`: session i sends its message and interrupt (i × 41 mod 2,000) ms into its model
      // call, as users who do not act in step would; otherwise all at the same moment (a burst).
      const run = async (count: number, into: string, spread: boolean) => {
        const sessions = await Promise.all(Array.from({ length: count }, async () => responsiveSession(ctx.client, await startSession(ctx.client, worker, newId(variant, name), ctx.workspace, {}, { stream: true }))));
        await settled(sessions.map(async (session, i) => {
          for (let t = 0; t < s.responsiveTrials; t++) await trial(session, t, into, spread ? (i * 41) % 2_000 : 0);
          await idle(session);
          if (session.bench.keel) for (let t = 0; t < approvals(into); t++) await approveTrial(session, t, into, spread ? (i * 41) % 2_000 : 0);
        }));
        await Promise.all(sessions.map((session) => session.bench.close()));
        // Where the answers waited: the sessions' workflow tasks, queued on the server and run by the worker.
        const tasks = await workflowTaskTimes(ctx.client, sessions.map((x) => x.id));
        samples[`${into}TaskQueuedMs`] = tasks.queuedMs;
        samples[`${into}TaskRunMs`] = tasks.runMs;
        return sessions.map((x) => x.id);
      };
      const ids = [...(await run(1, 'one', false)), ...(await run(s.responsiveSessions, 'many', true)), ...(await run(s.responsiveSessions, 'burst', false))];
      const used = since(before, pids);
      const events = await countEvents(ctx.client, ids);
      const extra: Record<string, number> = {};
      for (const [k, v] of Object.entries(samples)) {
        extra[`${k.replace(/Ms$/, '')}P50Ms`] = percentile(v, 50);
        extra[`${k.replace(/Ms$/, '')}P99Ms`] = percentile(v, 99);
      }
      for (const into of ['one', 'many', 'burst']) extra[`${into}LateInterrupts`] = late[into] ?? 0;
      return {
        ...phase({ scenario: name, round, variant, steps: (1 + 2 * s.responsiveSessions) * s.responsiveTrials * 2 + (isKeel(variant) ? (approvals('one') + s.responsiveSessions * approvals('many')) * 2 : 0), modelCalls: ctx.standin.requests.length - calls, ...used, events, extra }),
        samples,
      };
    }
    case 'cost': {
      // One session with prompt caching (the default) and one without, the same 20 turns;
      // the placement Keel had before and the best possible one are computed from the
      // recorded requests (bench/suite/cost.ts).
      await writeCostFiles(ctx.workspace, s.costTurns);
      ctx.standin.setScenario(costScenario(s.costTurns));
      const calls = ctx.standin.requests.length;
      const before = snapshot(pids);
      const ids: string[] = [];
      const session = async (options: Record<string, unknown>): Promise<BilledRequest[]> => {
        const from = ctx.standin.requests.length;
        const run = await startSession(ctx.client, worker, newId(variant, name), ctx.workspace, options);
        ids.push(run.id);
        for (let t = 1; t <= s.costTurns; t++) checkFinal(variant, await run.turn(costTurnText(t, s.costTurns, run.id)));
        await run.close();
        return ctx.standin.requests.slice(from).flatMap((r) => (r.usage !== null && r.status === 200 ? [{ body: r.body as Record<string, unknown>, usage: r.usage }] : []));
      };
      const cached = await session({});
      const uncached = await session({ promptCaching: false });
      // A 60-turn session that compacts (bench/suite/compaction-cost.ts), then one session per
      // limit kind, run until its budget stops it (bench/suite/budget-overshoot.ts).
      await writeCostFiles(ctx.workspace, s.compactTurns);
      ctx.standin.setScenario(costScenario(s.compactTurns));
      const compactFrom = ctx.standin.requests.length;
      const compacting = await startSession(ctx.client, worker, newId(variant, `${name}-compact`), ctx.workspace, { compactAboveTokens: s.compactAboveTokens });
      ids.push(compacting.id);
      for (let t = 1; t <= s.compactTurns; t++) checkFinal(variant, await compacting.turn(costTurnText(t, s.compactTurns, compacting.id)));
      await compacting.close();
      const compaction = compactionCost(BENCH_MODEL, s.compactTurns, billed(ctx.standin.requests.slice(compactFrom)));
      const overshoots: Overshoot[] = [];
      for (const [limit, allowed] of OVERSHOOT_LIMITS) {
        const from = ctx.standin.requests.length;
        const limited = await startSession(ctx.client, worker, newId(variant, `${name}-${limit}`), ctx.workspace, { limits: { [limit]: allowed } });
        ids.push(limited.id);
        for (let t = 1; t <= s.compactTurns; t++) {
          const outcome = await limited.keel!.send(costTurnText(t, s.compactTurns, limited.id)).catch(() => null);
          if (outcome?.outcome !== 'completed') break;
        }
        await limited.close();
        overshoots.push(overshoot(BENCH_MODEL, limit, allowed, billed(ctx.standin.requests.slice(from))));
      }
      // A goal of `costGoalTasks` tasks: planner, task agents (two reads each), critic. Its
      // placement without caching is the same requests without breakpoints, replayed.
      await writeGoalFiles(ctx.workspace, s.costGoalTasks);
      ctx.standin.setScenario(goalCostScenario(s.costGoalTasks));
      const goalFrom = ctx.standin.requests.length;
      const keelClient = await KeelClient.connect({ client: ctx.client, taskQueue: worker.taskQueue });
      const goal = await keelClient.startGoal(`Summarize the ${s.costGoalTasks} pairs of goal-*.txt files.`, {
        id: newId(variant, 'cost-goal'),
        workspace: ctx.workspace,
        model: BENCH_MODEL,
        autoApprove: true,
        policy: { mode: 'full-auto' },
        maxStepsPerTask: 6,
      });
      ids.push(goal.id);
      const report = await goal.result();
      if (report.verdict !== 'goal_met') throw new Error(`the cost goal ended ${report.verdict}`);
      const goalRequests = ctx.standin.requests.slice(goalFrom).flatMap((r) => (r.usage !== null && r.status === 200 ? [{ body: r.body as Record<string, unknown>, usage: r.usage }] : []));
      const used = since(before, pids);
      const events = await countEvents(ctx.client, ids);
      const keel = sessionCost(BENCH_MODEL, cached);
      const none = sessionCost(BENCH_MODEL, uncached);
      const main = sessionCost(BENCH_MODEL, replay(uncached, mainPlacement));
      const best = sessionCost(BENCH_MODEL, bestPlacement(BENCH_MODEL, uncached));
      const goalKeel = sessionCost(BENCH_MODEL, goalRequests);
      const goalNone = sessionCost(BENCH_MODEL, replay(goalRequests, withoutBreakpoints));
      const goalMain = sessionCost(BENCH_MODEL, replay(goalRequests, mainPlacement));
      const goalBest = sessionCost(BENCH_MODEL, bestPlacement(BENCH_MODEL, goalRequests));
      return phase({
        scenario: name,
        round,
        variant,
        steps: cached.length + uncached.length + goalRequests.length,
        modelCalls: ctx.standin.requests.length - calls,
        ...used,
        events,
        extra: {
          requestsPerSession: cached.length,
          inputTokensPerSession: keel.inputTokens,
          keelCacheReadShare: keel.cacheReadShare,
          keelCacheWriteTokens: keel.cacheWriteTokens,
          keelUsd: keel.usd,
          keelInputUsd: keel.inputUsd,
          noCachingCacheReadShare: none.cacheReadShare,
          noCachingUsd: none.usd,
          mainPlacementCacheReadShare: main.cacheReadShare,
          mainPlacementCacheWriteTokens: main.cacheWriteTokens,
          mainPlacementUsd: main.usd,
          bestCacheReadShare: best.cacheReadShare,
          bestCacheWriteTokens: best.cacheWriteTokens,
          bestUsd: best.usd,
          keelUsdOverBest: keel.usd / best.usd,
          goalRequests: goalRequests.length,
          goalInputTokens: goalKeel.inputTokens,
          goalKeelCacheReadShare: goalKeel.cacheReadShare,
          goalKeelCacheWriteTokens: goalKeel.cacheWriteTokens,
          goalKeelUsd: goalKeel.usd,
          goalNoCachingUsd: goalNone.usd,
          goalMainPlacementCacheReadShare: goalMain.cacheReadShare,
          goalMainPlacementUsd: goalMain.usd,
          goalBestCacheReadShare: goalBest.cacheReadShare,
          goalBestUsd: goalBest.usd,
          goalKeelUsdOverBest: goalKeel.usd / goalBest.usd,
          compactTurns: compaction.turns,
          compactAboveTokens: s.compactAboveTokens,
          compactRequests: compaction.requests,
          compactions: compaction.compactions,
          compactSessionUsd: compaction.session.usd,
          compactOldSessionUsd: compaction.oldSession.usd,
          compactSessionOverOld: compaction.session.usd / compaction.oldSession.usd,
          compactSummaryUsd: compaction.summaries.usd,
          compactOldSummaryUsd: compaction.oldSummaries.usd,
          compactSummaryOverOld: compaction.summaries.usd / compaction.oldSummaries.usd,
          compactSummaryCacheReadShare: compaction.summaries.cacheReadShare,
          compactSessionCacheReadShare: compaction.session.cacheReadShare,
          ...Object.fromEntries(
            overshoots.flatMap((o) => [
              [`${o.limit}Allowed`, o.allowed],
              [`${o.limit}Spent`, o.spent],
              [`${o.limit}Overshoot`, o.overshoot],
              [`${o.limit}Bound`, o.bound],
              [`${o.limit}Within`, o.within ? 1 : 0],
              [`${o.limit}Requests`, o.requests],
            ]),
          ),
        },
      });
    }
    default: {
      const never: never = name;
      throw new Error(`unknown scenario ${String(never)}`);
    }
  }
}

/** Each limit kind and the budget its session runs into (a few turns of the cost script each). */
const OVERSHOOT_LIMITS: ReadonlyArray<readonly [LimitKind, number]> = [
  ['costUsd', 0.05],
  ['inputTokens', 150_000],
  ['outputTokens', 400],
];

/** The answered requests, with what the stand-in billed for them. */
const billed = (requests: readonly RecordedRequest[]): BilledRequest[] =>
  requests.flatMap((r) => (r.usage !== null && r.status === 200 ? [{ body: r.body as Record<string, unknown>, usage: r.usage }] : []));

/** Like Promise.all, but a failure is thrown only after every promise has settled. */
async function settled<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** Ms from t0 until a client following the session's model topic, with the client's default settings (issue 31), sees the next text delta. */
async function firstModelDelta(session: BenchSession, from: number, t0: number, required = false): Promise<number> {
  const handle = session.keel!;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    for await (const item of handle.events({ from, topics: ['model'], signal: abort.signal })) {
      if (item.topic === 'model' && item.data.kind === 'delta') return performance.now() - t0;
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  if (required) throw new Error(`${session.id}: no model delta reached the client`);
  return Number.NaN;
}

/** The monotonic clock V8's CPU profiles stamp their samples with, in µs (CLOCK_MONOTONIC, as uv_hrtime). */
function turnClock(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * BENCH_TURN_TIMES=FILE: append each long session's turn boundaries (µs, the profiles' clock) as a
 * JSON line, so bench/profile-windows.ts can split a worker's CPU profile into its early and late turns.
 */
function logTurnTimes(variant: string, pid: number, times: readonly number[]): void {
  const file = process.env.BENCH_TURN_TIMES;
  if (file) fs.appendFileSync(file, `${JSON.stringify({ variant, pid, times })}\n`);
}

/** Turns at each end of a long session whose CPU per step is compared. */
const LIFE_WINDOW = 10;

/**
 * CPU per step (one-step turns) of the first and the last LIFE_WINDOW turns, and their ratio
 * (`lifeSlope`: 1 is flat). Empty for a session shorter than two windows. Keel's turns include
 * the server's answer to the describe after each (the scenario's continue-as-new check), the
 * same early and late. With three windows or more, also the second window's and
 * `warmLifeSlope`, the last ÷ the second: a fresh worker's first turns carry its JIT's and its
 * caches' first work (any variant's: the floors' `lifeSlope` is 0.6–0.8 for it), which the
 * second window no longer does.
 */
export function lifeSlope(cpuAt: readonly number[], stepsPerTurn = 1): Record<string, number> {
  const turns = cpuAt.length - 1;
  if (turns < 2 * LIFE_WINDOW) return {};
  const per = (from: number) => (cpuAt[from + LIFE_WINDOW]! - cpuAt[from]!) / (LIFE_WINDOW * stepsPerTurn);
  const first = per(0);
  const last = per(turns - LIFE_WINDOW);
  const second = turns >= 3 * LIFE_WINDOW ? per(LIFE_WINDOW) : undefined;
  return {
    firstTurnsCpuMsPerStep: first,
    lastTurnsCpuMsPerStep: last,
    ...(first > 0 ? { lifeSlope: last / first } : {}),
    ...(second !== undefined && second > 0 ? { secondTurnsCpuMsPerStep: second, warmLifeSlope: last / second } : {}),
  };
}

/** Polls `ready` every `everyMs` for up to a minute (long enough for a starved machine). */
async function until(ready: () => boolean | Promise<boolean>, what: string, everyMs: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`bench: waited a minute for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** What the `responsive` scenario does with a session, Keel's or the floor's. */
interface ResponsiveSession {
  readonly id: string;
  readonly bench: BenchSession;
  /** Starts a turn; resolves with how it ended ('completed', 'interrupted', …). */
  send(text: string): Promise<string>;
  /** Queues a message while a turn runs; resolves when it is taken (true: it has an id). */
  post(text: string): Promise<boolean>;
  interrupt(): Promise<void>;
  /** No turn running and nothing queued. */
  idle(): Promise<boolean>;
}

function responsiveSession(client: Client, bench: BenchSession): ResponsiveSession {
  const keel = bench.keel;
  if (keel) {
    return {
      id: bench.id,
      bench,
      send: async (text) => (await keel.send(text)).outcome,
      post: async (text) => Boolean((await keel.post(text)).messageId),
      interrupt: async () => {
        await keel.interrupt('bench');
      },
      idle: async () => {
        const state = await keel.state();
        return state.status === 'active' && state.queueLength === 0;
      },
    };
  }
  const handle = client.workflow.getHandle(bench.id);
  return {
    id: bench.id,
    bench,
    send: async (text) => ((await bench.turn(text)) === FLOOR_INTERRUPTED ? 'interrupted' : 'completed'),
    post: async (text) => Boolean((await handle.executeUpdate(floorPostUpdate, { args: [text] })).messageId),
    interrupt: () => handle.executeUpdate(floorInterruptUpdate, { args: [] }),
    idle: async () => {
      const state = await handle.query(floorStateQuery);
      return !state.running && state.queueLength === 0;
    },
  };
}
