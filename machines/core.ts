// The shape every Keel machine shares: a declarative transition table, a reducer that is
// checked against it, typed rejections, observers and JSON round-tripping. The reducers
// stay small because this file owns the bookkeeping they would otherwise repeat.
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

/** One row of a machine's transition table: `from --event--> to`, with a named guard when
 *  the same (from, event) pair can lead to several states. */
export interface TableRow<S extends string = string, E extends string = string> {
  readonly from: S;
  readonly event: E;
  readonly to: S;
  readonly guard?: string;
}

/**
 * Why a transition was refused.
 * - `not_allowed`: the table has no row for (state, event) — including every event sent to
 *   a terminal state;
 * - `guard_failed`: the pair is in the table, but this event cannot apply now (unknown call
 *   id, stale timer, budget still exhausted…);
 * - `table_violation`: the reducer produced a move the table does not list — a bug, never
 *   expected, reported instead of thrown so a workflow survives it.
 */
export type TransitionErrorCode = 'not_allowed' | 'guard_failed' | 'table_violation';

export interface TransitionError {
  readonly code: TransitionErrorCode;
  readonly machine: string;
  readonly state: string;
  readonly event: string;
  readonly message: string;
}

export type TransitionResult<St, D> =
  | { readonly ok: true; readonly state: St; readonly directives: readonly D[] }
  | { readonly ok: false; readonly error: TransitionError };

/** What a reducer returns: the next state with its directives, or a guard's refusal. */
export type Step<St, D> = { readonly state: St; readonly directives: readonly D[] } | { readonly reject: string };

export const reject = (reason: string): { readonly reject: string } => ({ reject: reason });

/** A state restored by `fromJSON` failed validation. */
export class MachineStateError extends Error {
  override readonly name = 'MachineStateError';
  constructor(
    readonly machine: string,
    readonly issues: readonly string[],
  ) {
    super(`invalid ${machine} state: ${issues.join('; ')}`);
  }
}

interface Status {
  readonly status: string;
}
interface Typed {
  readonly type: string;
}

export interface MachineSpec<St extends Status, Ev extends Typed, D> {
  readonly name: string;
  readonly states: readonly St['status'][];
  readonly events: readonly Ev['type'][];
  readonly terminal: readonly St['status'][];
  readonly table: readonly TableRow<St['status'], Ev['type']>[];
  readonly stateSchema: z.ZodType<St>;
  readonly eventSchema: z.ZodType<Ev>;
  readonly reduce: (state: St, event: Ev) => Step<St, D>;
}

export type EventParse<Ev> = { readonly ok: true; readonly event: Ev } | { readonly ok: false; readonly error: string };

export interface Machine<St extends Status, Ev extends Typed, D> {
  readonly name: string;
  readonly states: readonly St['status'][];
  readonly events: readonly Ev['type'][];
  readonly terminal: readonly St['status'][];
  readonly table: readonly TableRow<St['status'], Ev['type']>[];
  transition(state: St, event: Ev): TransitionResult<St, D>;
  /** True when `transition` would accept the event now (table row and guard). */
  canTransition(state: St, event: Ev): boolean;
  isTerminal(state: St): boolean;
  /** Plain JSON data: safe as workflow input after continue-as-new. */
  toJSON(state: St): unknown;
  /** Validates with zod; throws `MachineStateError` naming every problem. */
  fromJSON(json: unknown): St;
  /** Validates an incoming event (a signal payload, say) without applying it. */
  parseEvent(json: unknown): EventParse<Ev>;
}

export function formatIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`);
}

export function defineMachine<St extends Status, Ev extends Typed, D>(spec: MachineSpec<St, Ev, D>): Machine<St, Ev, D> {
  const rowKey = (from: string, event: string, to: string): string => `${from}\u0000${event}\u0000${to}`;
  const rows = new Set(spec.table.map((row) => rowKey(row.from, row.event, row.to)));
  const pairs = new Set(spec.table.map((row) => `${row.from}\u0000${row.event}`));
  const terminal = new Set<string>(spec.terminal);

  const fail = (code: TransitionErrorCode, state: string, event: string, message: string): TransitionResult<St, D> => ({
    ok: false,
    error: { code, machine: spec.name, state, event, message },
  });

  const transition = (state: St, event: Ev): TransitionResult<St, D> => {
    const from = state.status;
    const type = event.type;
    if (!pairs.has(`${from}\u0000${type}`)) {
      const why = terminal.has(from) ? `${from} is terminal` : `no transition on '${type}' from ${from}`;
      return fail('not_allowed', from, type, `${spec.name}: '${type}' is not accepted in state ${from} (${why})`);
    }
    const step = spec.reduce(state, event);
    if ('reject' in step) {
      return fail('guard_failed', from, type, `${spec.name}: '${type}' refused in state ${from}: ${step.reject}`);
    }
    const to = step.state.status;
    if (!rows.has(rowKey(from, type, to))) {
      return fail('table_violation', from, type, `${spec.name}: ${from} --${type}--> ${to} is not in the transition table`);
    }
    return { ok: true, state: step.state, directives: step.directives };
  };

  return {
    name: spec.name,
    states: spec.states,
    events: spec.events,
    terminal: spec.terminal,
    table: spec.table,
    transition,
    canTransition: (state, event) => transition(state, event).ok,
    isTerminal: (state) => terminal.has(state.status),
    // States hold only JSON data (null, never undefined), so a JSON copy is exact.
    toJSON: (state) => JSON.parse(JSON.stringify(state)) as unknown,
    fromJSON: (json) => {
      const parsed = spec.stateSchema.safeParse(json);
      if (!parsed.success) throw new MachineStateError(spec.name, formatIssues(parsed.error));
      return parsed.data;
    },
    parseEvent: (json) => {
      const parsed = spec.eventSchema.safeParse(json);
      return parsed.success
        ? { ok: true, event: parsed.data }
        : { ok: false, error: `invalid ${spec.name} event: ${formatIssues(parsed.error).join('; ')}` };
    },
  };
}

/** Hooks around transitions (seed 000 §6.2): the runner attaches logging, metrics and the
 *  event log here; the machines themselves never call out. */
export interface Observer<St, Ev, D> {
  before?(state: St, event: Ev): void;
  after?(from: St, to: St, event: Ev, directives: readonly D[]): void;
  rejected?(state: St, event: Ev, error: TransitionError): void;
}

/** `machine.transition` with observers called around it, in the order given. */
export function observe<St extends Status, Ev extends Typed, D>(
  machine: Machine<St, Ev, D>,
  ...observers: readonly Observer<St, Ev, D>[]
): (state: St, event: Ev) => TransitionResult<St, D> {
  return (state, event) => {
    for (const o of observers) o.before?.(state, event);
    const result = machine.transition(state, event);
    for (const o of observers) {
      if (result.ok) o.after?.(state, result.state, event, result.directives);
      else o.rejected?.(state, event, result.error);
    }
    return result;
  };
}

export interface TransitionCounts {
  /** `from --event--> to` → how many times it happened. */
  readonly transitions: Readonly<Record<string, number>>;
  /** `state × event (code)` → how many times it was refused. */
  readonly rejected: Readonly<Record<string, number>>;
}

export const transitionKey = (from: string, event: string, to: string): string => `${from} --${event}--> ${to}`;

/** Per-transition counters for metrics (seed 003's recommendation); `from` continues earlier counts (a previous run's). */
export function createCounters<St extends Status, Ev extends Typed, D>(from?: TransitionCounts): Observer<St, Ev, D> & {
  snapshot(): TransitionCounts;
} {
  const transitions: Record<string, number> = { ...from?.transitions };
  const rejected: Record<string, number> = { ...from?.rejected };
  return {
    after(from, to, event) {
      const key = transitionKey(from.status, event.type, to.status);
      transitions[key] = (transitions[key] ?? 0) + 1;
    },
    rejected(state, event, error) {
      const key = `${state.status} × ${event.type} (${error.code})`;
      rejected[key] = (rejected[key] ?? 0) + 1;
    },
    snapshot: () => ({ transitions: { ...transitions }, rejected: { ...rejected } }),
  };
}

/** JSON values: what tool inputs and event payloads may contain. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export const jsonSchema: z.ZodType<Json> = lazySchema(() => z.json());

export const nonNegInt = lazySchema(() => z.number().int().nonnegative());
export const nonNeg = lazySchema(() => z.number().nonnegative().finite());

/** Exhaustiveness check for `switch` statements over unions. */
export function assertNever(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`);
}
