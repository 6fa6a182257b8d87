// Queries of a closed workflow run: asked of the worker once, then answered from memory.
//
// Why: a closed run answers a query the same way for ever, but each query asked of it is a
// replay of its whole history on a worker (a closed run is no longer cached), and the SDK
// core, evicting the run after the replay, answers one of the queries buffered for it and
// drops the others: their callers wait out their deadline, and the API answered 504 (the
// console's tabs on a closed session, console-app.test.ts; schemathesis's reads of the
// goals it cancelled). So a query is first asked with NOT_OPEN, which the server refuses
// for a closed run without involving a worker; for a closed run the answer is asked once
// per run, query and arguments, one query at a time per run, and kept.
//
// Another process asking the same closed run at the same moment (two `keel status`, the console
// and the CLI) still meets the core's limit: it buffers one query-only task per run and drops
// the rest (temporalio/sdk-core#578), and the dropped query's caller waits out the server's
// 30 s and fails with DEADLINE_EXCEEDED ("query timed out before a worker could process it";
// four clients at once, five rounds: every round lost one to three). Such a query is asked
// again, under a short deadline first: a replay answers in well under a second.
import { type Client, Connection, isGrpcServiceError, type QueryDefinition, QueryRejectedError, ServiceError, WorkflowClient } from '@temporalio/client';

/** Answers kept per client (the least recently used go first). */
const MAX_ANSWERS = 500;

/**
 * The deadline of each attempt at a closed run's query; `undefined`: the server's own (30 s).
 * A query dropped by the worker is known only by its deadline, so the first is short; the
 * last gives a replay on a starved worker all the time the server would.
 */
const CLOSED_QUERY_DEADLINES_MS = [3_000, 10_000, undefined] as const;

/**
 * A query that no worker answered in time: dropped (sdk-core#578), or a worker starved or away.
 * Its deadline ends it as DEADLINE_EXCEEDED, or as CANCELLED ("Call cancelled") when the server,
 * holding the same deadline (grpc-timeout), resets the stream first: grpc-js reads an RST_STREAM
 * CANCEL so (seen once in five clean-clone `npm test` runs, a read of four clients at once). A
 * CANCELLED of a call the caller itself aborted (an abort signal of its own) is the caller's.
 */
export function timedOut(error: unknown, callerAborted: boolean): boolean {
  const cause = error instanceof ServiceError ? error.cause : error;
  if (!isGrpcServiceError(cause)) return false;
  const code = Number(cause.code);
  return code === DEADLINE_EXCEEDED || (code === CANCELLED && !callerAborted);
}
/** gRPC statuses (the numbers are the protocol's; @grpc/grpc-js is only a dev dependency here). */
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;

class ClosedRunAnswers {
  /** The same client, whose queries the server refuses when the run is not open. */
  private readonly openOnly: WorkflowClient;
  private readonly answers = new Map<string, Promise<unknown>>();
  /** Per closed run: the end of its queue of queries. */
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(private readonly client: Client) {
    this.openOnly = new WorkflowClient({ ...client.workflow.options, queryRejectCondition: 'NOT_OPEN' });
  }

  async query<R, A extends unknown[]>(workflowId: string, def: QueryDefinition<R, A>, args: A): Promise<R> {
    try {
      return await this.openOnly.getHandle(workflowId).query<R, A>(def, ...args);
    } catch (error) {
      if (!(error instanceof QueryRejectedError)) throw error;
    }
    const { runId } = await this.client.workflow.getHandle(workflowId).describe();
    const key = JSON.stringify([workflowId, runId, def.name, args]);
    const kept = this.answers.get(key);
    if (kept) {
      // Most recently used last.
      this.answers.delete(key);
      this.answers.set(key, kept);
      return kept as Promise<R>;
    }
    const tail = this.tails.get(runId) ?? Promise.resolve();
    const answer = tail.then(() => this.askClosed(workflowId, runId, def, args));
    const settled = answer.then(
      () => undefined,
      () => {
        // A failed answer is asked again next time (no worker, a deadline).
        if (this.answers.get(key) === answer) this.answers.delete(key);
      },
    );
    this.tails.set(runId, settled);
    void settled.then(() => {
      if (this.tails.get(runId) === settled) this.tails.delete(runId);
    });
    this.answers.set(key, answer);
    if (this.answers.size > MAX_ANSWERS) this.answers.delete(this.answers.keys().next().value!);
    return answer;
  }

  private async askClosed<R, A extends unknown[]>(workflowId: string, runId: string, def: QueryDefinition<R, A>, args: A): Promise<R> {
    const handle = this.client.workflow.getHandle(workflowId, runId);
    for (let attempt = 0; ; attempt++) {
      const deadlineMs = CLOSED_QUERY_DEADLINES_MS[attempt];
      try {
        if (deadlineMs === undefined) return await handle.query<R, A>(def, ...args);
        return await this.client.connection.withDeadline(Date.now() + deadlineMs, () => handle.query<R, A>(def, ...args));
      } catch (error) {
        const { connection } = this.client;
        const callerAborted = connection instanceof Connection && connection.callContextStorage.getStore()?.abortSignal?.aborted === true;
        if (attempt === CLOSED_QUERY_DEADLINES_MS.length - 1 || !timedOut(error, callerAborted)) throw error;
      }
    }
  }
}

const byClient = new WeakMap<Client, ClosedRunAnswers>();

/** A query of the workflow's current run, answered from memory once that run has closed. */
export function queryOnce<R, A extends unknown[]>(client: Client, workflowId: string, def: QueryDefinition<R, A>, ...args: A): Promise<R> {
  let answers = byClient.get(client);
  if (!answers) byClient.set(client, (answers = new ClosedRunAnswers(client)));
  return answers.query(workflowId, def, args);
}
