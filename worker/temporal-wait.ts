// A worker waits for Temporal at start, like any service in a fleet: a server that is
// restarting, or a worker host booted before its server, is tried again on the
// infrastructure table's backoff (machines/infra-retry.ts), one line a try, for as long as
// KEEL_TEMPORAL_WAIT_MS (default: the table's horizon, hours). It used to exit 1 at the first
// refusal, and a fleet restarted in the wrong order stayed down. A configuration no retry
// fixes (a bad certificate, a refused credential, a malformed address) still exits at once.
import { INFRA_WAIT, infraWaitDecision } from '../machines/infra-retry';

const NEVER_BETTER = /certificate|tls|unauthenticated|permission denied|invalid (uri|url|address)|namespace .* not found/i;

export interface TemporalWaitOptions<C> {
  connect(): Promise<C>;
  address: string;
  namespace: string;
  log(line: string): void;
  /** How long to keep trying (ms); default KEEL_TEMPORAL_WAIT_MS, else INFRA_WAIT.horizonMs. */
  horizonMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
}

/** The worker's connection to Temporal, once the server answers. */
export async function connectWaiting<C>(options: TemporalWaitOptions<C>): Promise<C> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const since = now();
  const horizonMs = options.horizonMs ?? INFRA_WAIT.horizonMs;
  for (let tries = 1; ; tries++) {
    try {
      const connection = await options.connect();
      if (tries > 1) options.log(`keel worker: Temporal at ${options.address} answered after ${tries} tries (${Math.round((now() - since) / 1000)} s)`);
      return connection;
    } catch (error) {
      const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
      const where = `Temporal at ${options.address} (namespace ${options.namespace})`;
      if (NEVER_BETTER.test(message)) throw new TemporalUnreachableError(`keel worker: cannot use ${where}: ${message}`, { cause: error });
      const decision = infraWaitDecision({ tries, since, now: now(), horizonMs });
      if (!decision.wait) {
        throw new TemporalUnreachableError(
          `keel worker: cannot reach ${where}, ${decision.reason}: ${message}. Start a local server with \`npm run dev\`, or set TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE`,
          { cause: error },
        );
      }
      options.log(`keel worker: waiting for ${where}, try ${tries}: ${message}; next try in ${Math.round(decision.delayMs / 1000)} s`);
      await sleep(decision.delayMs);
    }
  }
}

/** KEEL_TEMPORAL_WAIT_MS, checked: a number of ms ≥ 0 (0: one try). */
export function temporalWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.KEEL_TEMPORAL_WAIT_MS?.trim();
  if (!raw) return INFRA_WAIT.horizonMs;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`KEEL_TEMPORAL_WAIT_MS: expected milliseconds (a number ≥ 0), got ${JSON.stringify(raw)}`);
  return value;
}
