// A goal's task agent checkpoints its workspace when it ends (docs/fork-and-rewind.md
// "Goals"): the session's checkpoint activity (activities/workspace-checkpoint.ts), run on the
// workspace's host, recording what changed since the goal's last checkpoint and storing the
// agent's conversation so its end has one head. The goal keeps the result per attempt: a
// fork after this task lays its workspace out from it. Only for goals started with
// `checkpoints` (their agents' input has `checkpoint`); other agents record what they did before.
import { patched, proxyActivities } from '@temporalio/workflow';
import type { CheckpointActivities } from '../activities/workspace-checkpoint';
import type { AgentCheckpoint, AgentCheckpointInput } from './protocol/agent';
import type { ConversationLog } from './runtime';
import { failureMessage } from './payloads';
import { routed, type WorkspaceRoute } from './workspace-host';

/** Marks the agent runs that checkpoint at their end. */
export const AGENT_CHECKPOINT_PATCH = 'agent-checkpoints';

export async function checkpointAgentEnd(
  request: AgentCheckpointInput,
  at: { store: string; storeId: string | undefined; workspace: string; route: WorkspaceRoute | null; conversation: ConversationLog },
): Promise<AgentCheckpoint> {
  patched(AGENT_CHECKPOINT_PATCH);
  const { head, append } = at.conversation.outgoing();
  const { checkpointWorkspace } = proxyActivities<CheckpointActivities>({ startToCloseTimeout: '30 minutes', heartbeatTimeout: '60 seconds', retry: { maximumAttempts: 3 }, ...routed(at.route) });
  try {
    const r = await checkpointWorkspace({
      store: at.store,
      ...(at.storeId !== undefined ? { storeId: at.storeId } : {}),
      workspace: at.workspace,
      previous: request.previous,
      conversation: { head, append },
      limits: request.limits,
      usedBytes: request.usedBytes,
    });
    at.conversation.stored(r.head, append.length);
    return { manifest: r.manifest, head: r.head, changed: r.changed, removed: r.removed, storedBytes: r.storedBytes, skipped: r.skipped, incomplete: r.incomplete, error: null };
  } catch (error) {
    // The task's result stands without it: a fork after this task is refused with this reason.
    return { manifest: null, head, changed: 0, removed: 0, storedBytes: 0, skipped: [], incomplete: null, error: failureMessage(error) };
  }
}
