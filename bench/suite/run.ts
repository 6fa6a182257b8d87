// One bench run: a dev server (SQLite file), the stand-in, a worker process per variant,
// then each scenario in rounds, the variants' order rotating each round. Used by
// `npm run bench` (bench/suite.ts) and the short check in `npm test`.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { ClosableConnection } from '../../client/grpc-retry';
import { startStandin } from '../../standin/server';
import { startDevServer } from '../../worker/dev-server';
import type { Phase } from './measure';
import { loadAverage } from './proc';
import { summarise, type VariantSummary } from './report';
import { runScenario, SCENARIO_VARIANTS, type Context, type ScenarioName, type Sizes } from './scenarios';
import { benchScenario, writeStepFiles } from './script';
import { startPostgres, type TestPostgres } from '../../test/helpers/postgres';
import { isKeel, LABELS, unavailable, VariantWorker, type VariantName } from './variants';

export interface BenchOptions {
  scenarios: readonly ScenarioName[];
  variants: readonly VariantName[];
  rounds: number;
  /** Fewer (or more) rounds for some scenarios than `rounds` (`npm run bench`'s one round of parked sessions). */
  scenarioRounds?: Partial<Record<ScenarioName, number>>;
  /**
   * Rounds run first and not counted, in the scenarios whose ratios are targets (single,
   * concurrent, stream): a worker's first round is also its JIT's and its caches' first work,
   * ~1.5× a later round's CPU per step for every variant. Default 0.
   */
  warmupRounds?: number;
  sizes: Sizes;
  log?: (line: string) => void;
  /**
   * A prebuilt bundle of Keel's workflows for the keel worker (KEEL_WORKFLOW_BUNDLE; the test
   * run's one bundle): the worker then polls without bundling first. Only the start is
   * shorter; the rounds measure the same worker.
   */
  keelWorkflowBundle?: string;
  /**
   * After each phase (and each failed one): the phases and notes so far, to be written down, so
   * that a run that fails or is stopped later loses nothing measured.
   */
  onPhase?: (phases: readonly Phase[], notes: readonly string[]) => Promise<void>;
}

export interface BenchRun {
  meta: Record<string, string>;
  sizes: Sizes;
  /** What did not run, and why; anything odd seen on the way. */
  notes: string[];
  summary: Record<string, VariantSummary[]>;
  phases: Phase[];
}

/** The scenarios whose ratios are targets: a warm-up round is cheap there and steadies them. */
const WARMED_UP: ReadonlySet<ScenarioName> = new Set(['single', 'concurrent', 'stream', 'first-delta']);

export async function runBench(options: BenchOptions): Promise<BenchRun> {
  const { sizes } = options;
  const log = options.log ?? (() => {});
  const notes: string[] = [];
  const wanted = options.variants.includes('floor') ? options.variants : (['floor', ...options.variants] as VariantName[]);
  const variants = wanted.filter((v) => {
    const why = unavailable(v);
    if (why) notes.push(`${LABELS[v]} did not run: ${why}`);
    return !why;
  });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-'));
  const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-ws-')));
  await writeStepFiles(workspace, [1, sizes.singleSteps, sizes.steps]);
  const server = await startDevServer({ port: 0, dbFile: path.join(dir, 'temporal.db'), readyTimeoutMs: 180_000 });
  const standin = await startStandin({ scenario: benchScenario([1]) });
  const connection = await ClosableConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const workers = new Map<VariantName, VariantWorker>();
  const phases: Phase[] = [];
  // keel-pg's store: a PostgreSQL cluster of the run's own (test/helpers/postgres.ts: fsync off,
  // as the bench measures CPU per step, not the disk).
  let postgres: TestPostgres | null = null;
  const started = new Date();
  // A client call left behind by an abandoned stream follower (an aborted
  // SessionHandle.events() whose poll later fails) must not end the run: it is noted.
  const stray = (error: unknown) => {
    const message = `unhandled rejection (left unawaited by a client call): ${(error as Error)?.message?.split('\n')[0] ?? String(error)}`;
    log(message);
    notes.push(message);
  };
  process.on('unhandledRejection', stray);
  try {
    await Promise.all(
      variants.map(async (v) => {
        const extraEnv: Record<string, string> = isKeel(v) && options.keelWorkflowBundle ? { KEEL_WORKFLOW_BUNDLE: options.keelWorkflowBundle } : {};
        try {
          // A PostgreSQL that will not start leaves keel-pg out, with the reason, like a peer's worker.
          if (v === 'keel-pg') {
            postgres = await startPostgres();
            extraEnv.KEEL_STORE_URL = await postgres.createDatabase('keel_bench');
          }
          const worker = new VariantWorker(v, { address: server.address, namespace: server.namespace, anthropicUrl: standin.url, openaiUrl: standin.url }, extraEnv, log);
          await worker.start();
          workers.set(v, worker);
          log(`${v} worker polling (pid ${worker.pid})`);
        } catch (error) {
          if (v === 'floor' || v === 'keel') throw error;
          notes.push(`${LABELS[v]} did not run: ${v === 'keel-pg' && !extraEnv.KEEL_STORE_URL ? 'its PostgreSQL failed to start' : 'its worker failed to start'}: ${(error as Error).message.split('\n').slice(0, 6).join(' ')}`);
        }
      }),
    );
    const ctx: Context = {
      client,
      serverPid: server.process.pid!,
      standin,
      workspace,
      sizes,
      note: (line) => {
        log(line);
        notes.push(line);
      },
      restart: async (w) => {
        await w.stop();
        await w.start();
      },
    };
    for (const scenario of options.scenarios) {
      const order = SCENARIO_VARIANTS[scenario].filter((v) => workers.has(v));
      const rounds = options.scenarioRounds?.[scenario] ?? options.rounds;
      const warmups = WARMED_UP.has(scenario) ? (options.warmupRounds ?? 0) : 0;
      if (warmups > 0) notes.push(`${scenario}: ${warmups} warm-up round${warmups === 1 ? '' : 's'} of every variant first, not counted`);
      // Warm-up rounds first (negative), then the counted ones; a warm-up gets a round number
      // after the counted ones so that its sessions' ids are its own.
      for (let round = -warmups; round < rounds; round++) {
        const counted = round >= 0;
        const r = (round + order.length * warmups) % order.length;
        const rotated = [...order.slice(r), ...order.slice(0, r)];
        const label = counted ? `round ${round + 1}/${rounds}` : `warm-up ${round + warmups + 1}/${warmups} (not counted)`;
        for (const v of rotated) {
          try {
            const p = await runScenario(scenario, ctx, workers.get(v)!, counted ? round : rounds + round + warmups);
            if (counted) {
              phases.push(p);
              await options.onPhase?.(phases, notes);
            }
            if (counted && p.modelCalls !== p.steps && scenario !== 'parked') notes.push(`${scenario} round ${round + 1} ${v}: ${p.modelCalls} model calls for ${p.steps} steps`);
            log(
              `${scenario} ${label} ${v}: ${p.steps} steps, ${(p.wallMs / 1000).toFixed(1)} s, worker ${(p.workerCpuMs / p.steps).toFixed(1)} ms/step, ` +
                `server ${(p.serverCpuMs / p.steps).toFixed(1)} ms/step, ${(p.eventsTotal / p.steps).toFixed(1)} events/step, load ${p.loadAverage1m}`,
            );
          } catch (error) {
            // Recorded and the run goes on: a failure under load is a finding, not a reason
            // to lose the other rounds.
            const cause = (error as Error).cause instanceof Error ? ` (${((error as Error).cause as Error).message.split('\n')[0]})` : '';
            const message = `${scenario} ${label} ${v} failed: ${(error as Error).message.split('\n')[0]}${cause}`;
            log(message);
            notes.push(message);
            await options.onPhase?.(phases, notes);
          }
        }
      }
    }
  } finally {
    process.off('unhandledRejection', stray);
    await Promise.all([...workers.values()].map((w) => w.stop()));
    await connection.close();
    await standin.close();
    await server.stop();
    // (Assigned in a callback above, which TypeScript's narrowing does not see.)
    await (postgres as TestPostgres | null)?.stop();
    await fs.rm(dir, { recursive: true, force: true });
    await fs.rm(workspace, { recursive: true, force: true });
  }
  const meta = {
    when: started.toISOString(),
    machine: `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average at the end ${loadAverage().join(' ')}`,
    versions: `Node ${process.version}, ${server.version.replace(/\s+/g, ' ')}`,
    sizes: JSON.stringify(sizes),
  };
  return { meta, sizes, notes, summary: summarise(phases), phases };
}
