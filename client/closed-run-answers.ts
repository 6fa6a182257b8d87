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
import { type Client, type QueryDefinition, QueryRejectedError, WorkflowClient } from '@temporalio/client';

/** Answers kept per client (the least recently used go first). */
const MAX_ANSWERS = 500;

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
    const answer = tail.then(() => this.client.workflow.getHandle(workflowId, runId).query<R, A>(def, ...args));
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
}

const byClient = new WeakMap<Client, ClosedRunAnswers>();

/** A query of the workflow's current run, answered from memory once that run has closed. */
export function queryOnce<R, A extends unknown[]>(client: Client, workflowId: string, def: QueryDefinition<R, A>, ...args: A): Promise<R> {
  let answers = byClient.get(client);
  if (!answers) byClient.set(client, (answers = new ClosedRunAnswers(client)));
  return answers.query(workflowId, def, args);
}
