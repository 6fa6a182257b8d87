// The faults of a fleet run, drawn from its seed: a kill -9 of a random worker every
// `killEveryMs` (restarted a moment later), one worker away for `awayMs` (kill -9, started
// again after), `serverRestarts` Temporal server kill -9 and restart on its database file,
// PostgreSQL stopped for `pgStopMs`, and one quick PostgreSQL restart (`pgBlipMs` down).
// Each fault is a pair of steps: the fault, and the moment its service is back, after which
// the harness measures how long the fleet takes to recover (bench/fleet/run.ts).
import { seededRandom } from '../../test/chaos/model-faults';

export type FaultKind = 'worker-kill' | 'worker-away' | 'server-restart' | 'pg-stop' | 'pg-restart';

export interface Fault {
  id: number;
  kind: FaultKind;
  /** When it strikes, from the start of the fault window. */
  atMs: number;
  /** How long its service stays away (a server restart: as long as it takes to come back). */
  downMs: number;
  /** The worker it strikes (its index), for worker faults. */
  worker?: number;
}

export interface ScheduleOptions {
  seed: number;
  workers: number;
  windowMs: number;
  killEveryMs: number;
  /** How long a killed worker stays down before it is started again (drawn in [min, max]). */
  restartDelayMs: [number, number];
  awayMs: number;
  serverRestarts: number;
  pgStopMs: number;
  pgBlipMs: number;
}

export function faultSchedule(o: ScheduleOptions): Fault[] {
  const random = seededRandom(o.seed);
  const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));
  const faults: Omit<Fault, 'id'>[] = [];
  // The worker away, early enough that its absence ends inside the window when it can.
  const awayWorker = Math.floor(random() * o.workers);
  const awayAt = between(0.1 * o.windowMs, Math.max(0.1 * o.windowMs, Math.min(0.3 * o.windowMs, o.windowMs - o.awayMs)));
  faults.push({ kind: 'worker-away', atMs: awayAt, downMs: o.awayMs, worker: awayWorker });
  for (let at = o.killEveryMs; at < o.windowMs; at += o.killEveryMs) {
    // A random worker that is up then (not the one away, nor while it starts again): kill -9, started again a moment later.
    const candidates = Array.from({ length: o.workers }, (_, w) => w).filter((w) => !(w === awayWorker && at >= awayAt - 1_000 && at <= awayAt + o.awayMs + 60_000));
    if (candidates.length === 0) continue;
    const worker = candidates[Math.floor(random() * candidates.length)]!;
    faults.push({ kind: 'worker-kill', atMs: at, downMs: between(...o.restartDelayMs), worker });
  }
  // Server restarts and the PostgreSQL faults spread over the window, off the kill beats.
  for (let i = 0; i < o.serverRestarts; i++) faults.push({ kind: 'server-restart', atMs: between(((i + 0.3) * o.windowMs) / o.serverRestarts, ((i + 0.7) * o.windowMs) / o.serverRestarts), downMs: 0 });
  faults.push({ kind: 'pg-stop', atMs: between(0.35 * o.windowMs, 0.45 * o.windowMs), downMs: o.pgStopMs });
  faults.push({ kind: 'pg-restart', atMs: between(0.6 * o.windowMs, 0.7 * o.windowMs), downMs: o.pgBlipMs });
  return faults.sort((a, b) => a.atMs - b.atMs).map((f, id) => ({ id: id + 1, ...f }));
}
