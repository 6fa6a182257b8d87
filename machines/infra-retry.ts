// The one table for infrastructure errors, beside the model's (machines/model-retry.ts):
// what the conversation store, a workspace host, Temporal or the file system said, and
// whether it is waited out (transient: the service comes back by itself or an operator
// brings it back, and nothing is lost by waiting) or needs a human's decision (permanent:
// the next try fails the same way). Every caller reads it: the store's errors
// (activities/store/errors.ts) carry its verdict, the turn runner and setup wait by it
// (workflows/infra-wait.ts). A blip — a restarted database, a rebooted host — used to end
// runs for good: store errors were non-retryable, and a setup that failed closed its run.
// docs/deployment.md ("What Keel waits out") shows this same table.

export type InfraVerdict = 'transient' | 'permanent';
export type InfraService = 'conversation store' | 'workspace host' | 'temporal' | 'file system';

export interface InfraRule {
  readonly verdict: InfraVerdict;
  readonly why: string;
}

const transient = (why: string): InfraRule => ({ verdict: 'transient', why });
const permanent = (why: string): InfraRule => ({ verdict: 'permanent', why });

/**
 * By code: the operating system's errno, PostgreSQL's SQLSTATE (with its documented name,
 * as activities/store/errors.ts faultCode writes it) or Keel's own names. A code not listed
 * is looked up by its SQLSTATE class, then by the message (INFRA_MESSAGES), else permanent:
 * an error nobody has seen is shown to a human rather than retried for hours.
 */
export const INFRA_ERROR_TABLE: Readonly<Record<string, InfraRule>> = {
  ECONNREFUSED: transient('nothing listens: the service is restarting or not yet up'),
  ECONNRESET: transient('the connection was dropped (a restart, a failover)'),
  ECONNABORTED: transient('the connection was dropped (a restart, a failover)'),
  EPIPE: transient('the connection was dropped while writing'),
  ETIMEDOUT: transient('no answer in time: a busy or unreachable service'),
  EHOSTUNREACH: transient('the host is unreachable (rebooting, a network partition)'),
  ENETUNREACH: transient('the network is unreachable'),
  EHOSTDOWN: transient('the host is down'),
  EAI_AGAIN: transient('name resolution failed for now'),
  ENOTFOUND: transient('the host name does not resolve (a host that is being replaced)'),
  EMFILE: transient('too many open files in this process: they are released as calls finish'),
  ENFILE: transient('too many open files on this host'),
  // Permanent for now: the session is suspended with the reason and `reset` goes on once an
  // operator has freed space (test/integration/store-damage.test.ts). Waiting it out instead
  // needs that test rewritten for a run that waits; not done yet.
  ENOSPC: permanent('the disk is full: an operator frees space, then `reset` goes on'),
  EBUSY: transient('the resource is busy'),
  EAGAIN: transient('the resource is temporarily unavailable'),
  '53100 disk_full': transient("the database's disk is full: runs wait until an operator frees space"),
  '53200 out_of_memory': transient('the database is out of memory for now'),
  '53300 too_many_connections': transient('the database has no connection to spare for now'),
  '57P01 admin_shutdown': transient('the database is shutting down (a restart)'),
  '57P02': transient('the database crashed and restarts'),
  '57P03': transient('the database is starting up'),
  '40001': transient('a serialization failure: the same statement succeeds when sent again'),
  '40P01': transient('a deadlock: the same statement succeeds when sent again'),
  '25006 read_only_sql_transaction': transient('the database is a replica for now (a failover in progress)'),
  schedule_to_start: transient("no worker of the workspace host took the call: the host is restarting or away"),
  unavailable: transient('the service did not answer (Temporal: UNAVAILABLE, DEADLINE_EXCEEDED)'),
  EACCES: permanent('permission denied: an operator must fix the permissions'),
  EPERM: permanent('operation not permitted: an operator must fix the permissions'),
  EROFS: permanent('a read-only file system: an operator must remount it'),
  '42501 insufficient_privilege': permanent("the store's database user may not do this: grant it or use another user"),
  '28P01 invalid_password': permanent("the store's password is wrong (KEEL_STORE_URL)"),
  '3D000 invalid_catalog_name': permanent("the store's database does not exist (KEEL_STORE_URL)"),
  foreign: permanent("the worker's store is not the run's store: configure the fleet's store, or reset the run"),
  corrupt: permanent('corrupt beyond repair: the run is reset or repaired by a human'),
  workspace_gone: permanent('the workspace directory is gone: restore it, or reassign the run to a host that has it'),
};

/** SQLSTATE classes (the first two characters) whose every code is transient. */
const TRANSIENT_SQLSTATE_CLASSES: Readonly<Record<string, string>> = {
  '08': 'connection exception: the database dropped or refused the connection',
  '57': 'operator intervention: the database is restarting',
  '53': 'insufficient resources for now',
};

/** Errors without a code (node-postgres says these in words). */
const INFRA_MESSAGES: ReadonlyArray<readonly [RegExp, InfraRule]> = [
  [/Connection terminated|terminating connection|server closed the connection|Client has encountered a connection error/i, transient('the database dropped the connection (a restart)')],
  [/timeout exceeded when trying to connect|Connection timed out|timed out/i, transient('no answer in time: a busy or unreachable service')],
  [/the database system is (starting up|shutting down|in recovery mode)/i, transient('the database is restarting')],
  [/sorry, too many clients/i, transient('the database has no connection to spare for now')],
];

/** The rule for an error with `code` (errno, `SQLSTATE name`, Keel's) and `message`; unknown errors are permanent. */
export function classifyInfraError(code: string | null | undefined, message = ''): InfraRule & { code: string | null } {
  if (code) {
    const exact = INFRA_ERROR_TABLE[code] ?? INFRA_ERROR_TABLE[code.split(' ')[0]!];
    if (exact) return { ...exact, code };
    const sqlstate = /^([0-9A-Z]{2})[0-9A-Z]{3}\b/.exec(code)?.[1];
    const byClass = sqlstate === undefined ? undefined : TRANSIENT_SQLSTATE_CLASSES[sqlstate];
    if (byClass !== undefined) return { ...transient(byClass), code };
  }
  for (const [pattern, rule] of INFRA_MESSAGES) if (pattern.test(message)) return { ...rule, code: code ?? null };
  return { ...permanent('not a known passing fault: a human decides'), code: code ?? null };
}

/**
 * How transient errors are waited out: tries this far apart (the last entry repeats) for as
 * long as the horizon, counted from the first failure of the wait. Hours, not seconds: a
 * database restored from a backup or a host rebooted after a kernel update is back in
 * minutes to hours, and a run that waits loses nothing (its workflow holds its place).
 */
export const INFRA_WAIT = {
  backoffMs: [1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000],
  horizonMs: 6 * 60 * 60 * 1000,
} as const;

export type InfraWaitDecision = { readonly wait: true; readonly delayMs: number } | { readonly wait: false; readonly reason: string };

/**
 * Whether try `tries` + 1 is made after a transient failure, and after how long. `since` is
 * when the wait began (the first failure); the horizon counts from it.
 */
export function infraWaitDecision(input: { tries: number; since: number; now: number; horizonMs?: number | undefined }): InfraWaitDecision {
  const horizonMs = input.horizonMs ?? INFRA_WAIT.horizonMs;
  const waited = input.now - input.since;
  if (waited >= horizonMs) return { wait: false, reason: `still failing after ${describeDuration(waited)} (the horizon is ${describeDuration(horizonMs)})` };
  const step = INFRA_WAIT.backoffMs[Math.max(0, input.tries - 1)] ?? INFRA_WAIT.backoffMs.at(-1)!;
  return { wait: true, delayMs: Math.min(step, horizonMs - waited) };
}

/** What a run shows while it waits: "waiting for the conversation store since 12:03:07, 14 tries: …". */
export interface InfraWait {
  service: InfraService;
  /** Which one: the store's address, the host's name. */
  target: string;
  since: number;
  tries: number;
  error: string;
}

export function describeInfraWait(w: InfraWait): string {
  const since = clockTime(w.since);
  const what = w.service === 'workspace host' ? `workspace host "${w.target}"` : w.service === 'conversation store' ? `the conversation store (${w.target})` : `${w.service} ${w.target}`;
  return `waiting for ${what} since ${since} UTC, ${w.tries} ${w.tries === 1 ? 'try' : 'tries'}: ${w.error}`;
}

/**
 * The KeelWaiting search attribute of a run that waits (workflows/waiting-attribute.ts): a
 * short, stable word an operator queries by (`KeelWaiting = 'conversation-store'`,
 * `KeelWaiting = 'host:worker-3'`), not the changing sentence of describeInfraWait. Null:
 * the run waits for nothing (the attribute is removed).
 */
export function infraWaitingKey(w: Pick<InfraWait, 'service' | 'target'> | null): string | null {
  if (w === null) return null;
  switch (w.service) {
    case 'conversation store':
      return 'conversation-store';
    case 'workspace host':
      return `host:${w.target}`;
    case 'temporal':
      return 'temporal';
    case 'file system':
      return 'file-system';
    default: {
      const never: never = w.service;
      throw new Error(`unknown infrastructure service ${JSON.stringify(never)}`);
    }
  }
}

/** hh:mm:ss UTC of a time in ms since the epoch (machines read no clock and make no Date). */
function clockTime(ms: number): string {
  const s = Math.floor(ms / 1000) % 86_400;
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(Math.floor(s / 3600))}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
}

function describeDuration(ms: number): string {
  if (ms >= 3_600_000) return `${Math.round((ms / 3_600_000) * 10) / 10} h`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 1000)} s`;
}
