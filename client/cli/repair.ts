// `keel repair <id> [--run-id ID] [--dry-run] [--json]`: what the workers' sweep does for the
// runs the server marks (worker/replay-repair-sweep.ts), for one run, now: replays its history
// with this checkout's workflow code and, when it is the SDK's update-ordering fault
// (machines/replay-repair.ts), resets it to before the misordered task, signals and updates
// re-applied. A run that replays is left as it is; any other failure is left, with the reason.
// Exit 0 when the run replays or was reset, 1 when it was left to a human.
import type { RepairOutcome } from '../../worker/replay-repair';
import { withClient } from './common';
import { EXIT } from './output';

export interface RepairCommandOptions {
  runId?: string;
  dryRun?: boolean;
  json?: boolean;
}

export function repairCommand(id: string, o: RepairCommandOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const [{ repairRun }, { keelReplayOptions }] = await Promise.all([import('../../worker/replay-repair'), import('../../worker/worker')]);
    const outcome: RepairOutcome = await repairRun(keel.client, await keelReplayOptions(process.env), { workflowId: id, ...(o.runId ? { runId: o.runId } : {}) }, { dryRun: Boolean(o.dryRun) });
    if (out.json) out.emit({ workflowId: id, ...outcome });
    else {
      switch (outcome.kind) {
        case 'healthy':
          out.line(`${id}: its history replays with this code; nothing to repair`);
          break;
        case 'reset':
          out.line(o.dryRun ? `${id}: would reset to event ${outcome.toEventId}: ${outcome.reason}` : `${id}: reset to event ${outcome.toEventId}; new run ${outcome.newRunId}: ${outcome.reason}`);
          break;
        case 'left':
          out.line(`${id}: not repaired: ${outcome.reason}`);
          break;
        default:
          outcome satisfies never;
      }
    }
    return outcome.kind === 'left' ? EXIT.error : EXIT.ok;
  });
}
