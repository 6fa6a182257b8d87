// A store error is a store error: a segment that is missing, corrupt, unreadable or
// unwritable fails the model call with a ConversationStoreError naming the segment, the
// store and the cause, non-retryable for Temporal and classed `fatal` for the model's
// table — never retried as a model fault, never counted as one. The workflow decides: it
// repairs what it can (missing or corrupt segments: machines/conversation-repair.ts), waits
// out what the infrastructure table calls transient (a stopped or restarting database, a
// dropped connection: machines/infra-retry.ts, `transient` in the details), and shows the
// rest (a permission, a foreign store) to its operator with the reason.
import { ApplicationFailure } from '@temporalio/activity';
import { NO_RESPONSE } from '../../machines/model-retry';
import { classifyInfraError } from '../../machines/infra-retry';
import { CONVERSATION_STORE_FAILURE, type StoreFaultCause, type StoreFailureDetails } from '../../machines/conversation-repair';
import type { ObjectStore } from './interface';

export type { StoreFaultCause } from '../../machines/conversation-repair';

const REPAIRABLE: ReadonlySet<StoreFaultCause> = new Set(['missing', 'corrupt', 'undecryptable']);

/** A short name for what the operating system or the database said (ENOSPC, EROFS, 53100 disk_full…). */
export function faultCode(error: unknown): string | null {
  const e = error as { code?: unknown; errno?: unknown; errors?: unknown } | null;
  if (e && typeof e.code === 'string') return PG_CODES[e.code] ?? e.code;
  // Node's happy-eyeballs connect fails with an AggregateError of each address's error.
  if (e && Array.isArray(e.errors)) for (const inner of e.errors) if (faultCode(inner) !== null) return faultCode(inner);
  return null;
}

// The Postgres SQLSTATEs an operator acts on, by their documented names.
const PG_CODES: Record<string, string> = {
  '53100': '53100 disk_full',
  '53200': '53200 out_of_memory',
  '53300': '53300 too_many_connections',
  '25006': '25006 read_only_sql_transaction',
  '42501': '42501 insufficient_privilege',
  '57P01': '57P01 admin_shutdown',
  '57P03': '57P03 cannot_connect_now',
  '3D000': '3D000 invalid_catalog_name',
  '28P01': '28P01 invalid_password',
};

export class ConversationStoreError extends Error {
  override readonly name = 'ConversationStoreError';
  /** What went wrong (Error's own `cause` is what the backend threw). */
  readonly fault: StoreFaultCause;
  readonly segment: string | null;
  readonly store: string;
  readonly code: string | null;

  constructor(options: { cause: StoreFaultCause; segment: string | null; store: Pick<ObjectStore, 'kind' | 'where'>; detail: string; code?: string | null; error?: unknown }) {
    const where = `${options.store.kind === 'local' ? 'local directory' : 'store'} ${options.store.where}`;
    const what = options.segment === null ? 'the conversation store' : `conversation segment ${options.segment}`;
    const code = options.code ?? null;
    super(`${what} in ${where}: ${options.detail}${code !== null && !options.detail.includes(code) ? ` (${code})` : ''}`, options.error !== undefined ? { cause: options.error } : undefined);
    this.fault = options.cause;
    this.segment = options.segment;
    this.store = `${options.store.kind} ${options.store.where}`;
    this.code = code;
  }

  get repairable(): boolean {
    return REPAIRABLE.has(this.fault);
  }

  /** Waited out, not shown to a human: the store could not be reached or was busy (machines/infra-retry.ts). */
  get transient(): boolean {
    if (this.fault !== 'unreadable' && this.fault !== 'unwritable') return false;
    const cause = this.cause instanceof Error ? this.cause.message : '';
    return classifyInfraError(this.code, `${cause} ${this.message}`).verdict === 'transient';
  }

  /** The failure the activity throws: non-retryable, classed fatal, with what the workflow needs to repair. */
  failure(): ApplicationFailure {
    const details: StoreFailureDetails = {
      ...NO_RESPONSE,
      failureClass: 'fatal',
      usage: null,
      store: this.store,
      segment: this.segment,
      storeCause: this.fault,
      code: this.code,
      repairable: this.repairable,
      transient: this.transient,
    };
    return ApplicationFailure.create({ type: CONVERSATION_STORE_FAILURE, message: this.message, nonRetryable: true, details: [details] });
  }
}

/** Wraps what a backend threw while reading or writing. */
export function ioFault(op: 'read' | 'write', store: ObjectStore, segment: string | null, error: unknown): ConversationStoreError {
  if (error instanceof ConversationStoreError) return error;
  const code = faultCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return new ConversationStoreError({
    cause: op === 'read' ? 'unreadable' : 'unwritable',
    segment,
    store,
    detail: `cannot be ${op === 'read' ? 'read' : 'written'}: ${message}`,
    code,
    error,
  });
}
