// A new AG-UI thread forked from another thread's message (docs/fork-and-rewind.md, "AG-UI"):
// AG-UI has no fork of its own, so a client (a CopilotKit app's "branch from here") starts a
// run on a new threadId with `forwardedProps.keel.forkOf` naming the thread (or any session)
// and the message or turn to branch at. On that thread's first run the session
// `agui-<threadId>` is started as a fork — the conversation up to that point, the files as
// they were then in a new workspace — instead of an empty session; later runs of the thread
// are ordinary runs. A message is mapped to the first turn boundary that holds it (its turn's
// end): AG-UI message ids are `<session>-m<index>` (server/ag-ui.ts's snapshot).
import { z } from 'zod';
import { CheckpointError } from '../client/checkpoints';
import { NotFoundError } from '../client/errors';
import type { KeelClient } from '../client/keel-client';
import { ProblemError } from './problem';
import { agUiThreadIdSchema, workflowIdSchema } from './schemas';

const forkOfSchema = z
  .strictObject({
    threadId: agUiThreadIdSchema.optional(),
    sessionId: workflowIdSchema.optional(),
    atTurn: z.number().int().nonnegative().optional(),
    messageId: z.string().min(1).max(300).optional(),
  })
  .refine((f) => (f.threadId === undefined) !== (f.sessionId === undefined), 'name one of threadId or sessionId')
  .refine((f) => (f.atTurn === undefined) !== (f.messageId === undefined), 'name one of atTurn or messageId');
const forwardedSchema = z.looseObject({ keel: z.looseObject({ forkOf: forkOfSchema.optional() }).optional() });

/** What a run's forwardedProps ask to fork from, if anything (a malformed request is a 400 naming the field). */
export function forkOfRun(body: unknown): z.output<typeof forkOfSchema> | null {
  const props = (body as { forwardedProps?: unknown } | null | undefined)?.forwardedProps;
  if (props === undefined || props === null) return null;
  const parsed = forwardedSchema.safeParse(props);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ pointer: `/body/forwardedProps/${i.path.map(String).join('/')}`, message: i.message }));
    throw new ProblemError(400, 'validation', errors.map((e) => `${e.pointer}: ${e.message}`).join('; '), { errors });
  }
  return parsed.data.keel?.forkOf ?? null;
}

/** Starts `id` as a fork (when it does not exist yet); false when the thread already has its session. */
export async function forkThread(keel: KeelClient, id: string, forkOf: z.output<typeof forkOfSchema>): Promise<boolean> {
  const exists = await keel.kindOf(id).then(
    () => true,
    (error: unknown) => {
      if (error instanceof NotFoundError) return false;
      throw error;
    },
  );
  if (exists) return false;
  const parentId = forkOf.sessionId ?? `agui-${forkOf.threadId!}`;
  let atTurn = forkOf.atTurn;
  if (forkOf.messageId !== undefined) {
    const m = /-m(\d+)(?:-.*)?$/.exec(forkOf.messageId);
    if (!m || !forkOf.messageId.startsWith(`${parentId}-m`)) throw new ProblemError(400, 'validation', `messageId ${forkOf.messageId} is not a message of ${parentId} (its ids are ${parentId}-m<index>)`, { errors: [{ pointer: '/body/forwardedProps/keel/forkOf/messageId', message: 'not a message of that thread' }] });
    const index = Number(m[1]);
    const view = await keel.getSession(parentId).checkpoints();
    const turn = view.turns.find((t) => t.messages > index && t.manifest !== null);
    if (turn === undefined) throw new CheckpointError(parentId, 'no_checkpoint', `no finished turn holds message ${index} yet`);
    atTurn = turn.turn;
  }
  await keel.forkSession(parentId, { atTurn: atTurn!, id });
  return true;
}
