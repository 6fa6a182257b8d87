// What every CLI command shares: a connected client, errors turned into exit codes, and
// output that is JSON for scripts (--json) or plain lines for people.
import { ServiceError } from '@temporalio/client';
import { ConnectionError, NoAnswerError, NotFoundError, UpdateRejectedError, WorkflowEndedError } from '../errors';
import { KeelClient } from '../keel-client';
import { EXIT, Output } from './output';

export class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Runs a command body with a client; maps errors to the documented exit codes. */
export async function withClient(json: boolean | undefined, body: (keel: KeelClient, out: Output) => Promise<number | void>): Promise<void> {
  const out = new Output(Boolean(json));
  let keel: KeelClient | null = null;
  let code: number;
  try {
    keel = await KeelClient.connect();
    code = (await body(keel, out)) ?? EXIT.ok;
  } catch (error) {
    code = exitCodeOf(error);
    const message = messageOf(error);
    if (out.json) out.emit({ error: { code, type: error instanceof Error ? error.name : 'Error', message, ...(error instanceof UpdateRejectedError ? { reason: error.reason } : {}) } });
    else process.stderr.write(`keel: ${message}\n`);
  } finally {
    await keel?.close().catch(() => undefined);
  }
  process.exitCode = code;
}

/**
 * What a failed command says. The SDK's ServiceError names only the call ("Failed to query
 * Workflow") and keeps the server's answer in its cause: a `keel status` that failed under load
 * said no more than that. Keel's own errors say it all already.
 */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error instanceof ServiceError && error.cause instanceof Error ? error.cause.message : '';
  return cause && !error.message.includes(cause) ? `${error.message}: ${cause}` : error.message;
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof CliExit) return error.code;
  if (error instanceof UpdateRejectedError) return EXIT.rejected;
  if (error instanceof NotFoundError) return EXIT.notFound;
  if (error instanceof ConnectionError) return EXIT.unreachable;
  // No worker took the request: the same remedy as an unreachable server (start one).
  if (error instanceof NoAnswerError) return EXIT.unreachable;
  if (error instanceof WorkflowEndedError) return EXIT.error;
  return EXIT.error;
}

/** A goal or a session, by its workflow type. */
export async function resolve(keel: KeelClient, id: string) {
  const kind = await keel.kindOf(id);
  if (kind === 'goal') return { kind, goal: keel.getGoal(id) } as const;
  if (kind === 'session') return { kind, session: keel.getSession(id) } as const;
  throw new CliExit(EXIT.usage, `${id} is ${kind ? `an ${kind}` : 'not a Keel workflow'}: use its goal or session id`);
}
