// Fork: a new session whose conversation is its parent's up to a turn and whose workspace is
// a new directory laid out from that turn's checkpoint (docs/fork-and-rewind.md). The client
// reads the parent's turn boundaries (the `checkpoints` query), picks one (a turn before a
// fork's own start is its parent's: asked there), and starts the fork with the parent's
// options — same system, tools, model and effective policy, so the fork's first call reuses
// the parent's cached prefix — and the fork point. The workflow lays the workspace out
// (workflows/session-checkpoints.ts). The parent is not touched.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { pickCheckpoint } from '../machines/turn-checkpoints';
import { forkRequestSchema, type ForkRequest } from '../workflows/protocol/checkpoints';
import { sessionOptionsSchema, type SessionOptions } from '../workflows/protocol/session';
import { sessionWorkflow } from '../workflows/session';
import { code } from '../workflows/markdown';
import { describeIssues } from '../workflows/payloads';
import { stampedMemo, startSearchAttributes } from '../workflows/run-format';
import { CheckpointError, readCheckpoints } from './checkpoints';
import { InvalidInputError, mapErrors } from './errors';
import { forkWorkspacePath } from './workspace';
import { SessionHandle } from './session-handle';

export interface ForkResult {
  session: SessionHandle;
  id: string;
  workspace: string;
  forkOf: { sessionId: string; turn: number; checkpointId: string };
}

const STATUS = defineSearchAttributeKey('KeelStatus', SearchAttributeType.KEYWORD);
const PENDING = defineSearchAttributeKey('KeelPendingApprovals', SearchAttributeType.INT);

export async function forkSession(client: Client, taskQueue: string, parentId: string, request: ForkRequest): Promise<ForkResult> {
  const parsed = forkRequestSchema.safeParse(request);
  if (!parsed.success) throw new InvalidInputError('forkSession', describeIssues(parsed.error.issues));
  const { atTurn, checkpointId } = parsed.data;
  if ((atTurn === undefined) === (checkpointId === undefined)) throw new InvalidInputError('forkSession', ['name one of atTurn or checkpointId']);
  if (parsed.data.workspace !== undefined && !path.isAbsolute(parsed.data.workspace)) throw new InvalidInputError('forkSession', ['workspace: must be an absolute path']);
  const view = await readCheckpoints(client, parentId);
  if (!view.enabled) throw new CheckpointError(parentId, 'checkpoints_off', 'this session keeps no checkpoints (start it with checkpoints: true)');
  const picked = pickCheckpoint(view.turns, view.rewound, { turn: atTurn, id: checkpointId });
  if (!picked.ok) {
    // A turn before a fork's own start is its parent's (the same conversation and files).
    if (view.forkOf !== null && atTurn !== undefined && atTurn < view.forkOf.turn) return forkSession(client, taskQueue, view.forkOf.sessionId, request);
    throw new CheckpointError(parentId, picked.code, picked.message);
  }
  const at = picked.checkpoint;
  const id = parsed.data.id ?? `${parentId}-fork${at.turn}-${randomUUID().slice(0, 8)}`;
  const parentOptions = view.base.options as SessionOptions;
  const workspace = parsed.data.workspace !== undefined ? await forkWorkspacePath(parsed.data.workspace) : path.join(path.dirname(parentOptions.workspace), `${path.basename(parentOptions.workspace)}.fork-${id.slice(-8)}`);
  const args: SessionOptions = {
    ...parentOptions,
    workspace,
    // The parent's store holds the conversation and the files (by default it is in the parent's workspace).
    storeDir: parentOptions.storeDir,
    // The parent's effective policy: its workspace's policy file is Keel's state, not copied.
    ...(view.base.policy !== null ? { policy: view.base.policy } : {}),
    forkOf: { sessionId: parentId, turn: at.turn, checkpoint: at, ...(view.base.storeId !== null ? { storeId: view.base.storeId } : {}) },
  };
  const valid = sessionOptionsSchema.safeParse(args);
  if (!valid.success) throw new InvalidInputError('forkSession', describeIssues(valid.error.issues));
  await mapErrors(id, 'forkSession', () =>
    client.workflow.start(sessionWorkflow, {
      taskQueue,
      workflowId: id,
      args: [args],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `session in ${code(workspace)}, forked from ${code(parentId)} at turn ${at.turn}`,
      memo: stampedMemo({ keelForkOf: `${parentId}@${at.turn}` }),
      typedSearchAttributes: [...startSearchAttributes('session', workspace), { key: STATUS, value: 'active' }, { key: PENDING, value: 0 }],
    }),
  );
  return { session: new SessionHandle(client, id), id, workspace, forkOf: { sessionId: parentId, turn: at.turn, checkpointId: at.id } };
}
