// A session's turn boundaries as the SDK reads them (the `checkpoints` query), and the error a
// fork or rewind is refused with when there is none to use (docs/fork-and-rewind.md).
import type { Client } from '@temporalio/client';
import { checkpointsQuery, type CheckpointsView } from '../workflows/protocol/checkpoints';
import { queryOnce } from './closed-run-answers';
import { KeelError, mapErrors } from './errors';

/** A fork or a read of checkpoints was refused: `code` says why (`checkpoints_off`, `no_checkpoint`, `checkpoint_failed`). */
export class CheckpointError extends KeelError {
  constructor(
    readonly workflowId: string,
    readonly code: string,
    message: string,
  ) {
    super(`${workflowId}: ${message}`);
  }
}

/** A session's turn boundaries; a session started without checkpoints says so. */
export async function readCheckpoints(client: Client, id: string): Promise<CheckpointsView> {
  try {
    return await mapErrors(id, 'checkpoints', () => queryOnce(client, id, checkpointsQuery));
  } catch (error) {
    if (/checkpoints/.test((error as Error).message) && /(unknown|not registered|did not register|handler)/i.test((error as Error).message)) {
      throw new CheckpointError(id, 'checkpoints_off', 'this session keeps no checkpoints (start it with checkpoints: true)');
    }
    throw error;
  }
}


