// The floor: the least a Temporal workflow can do for the same conversation. A session is
// one workflow; a message is an update whose handler runs the turn (model call, tool
// calls, model call…) and returns the final text. No event log, no stream, no policy, no
// budget: whatever Keel costs above this is the price of what it records. With `localTools`
// (the `floor-local` variant) it runs those tools as local activities, as Keel does.
import { allHandlersFinished, condition, defineSignal, defineUpdate, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type Anthropic from '@anthropic-ai/sdk';
import type { FloorActivities } from './activities';
import { isLocalBudgetExceeded } from '../../machines/local-budget';

const { floorModel } = proxyActivities<FloorActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 3 } });
const { runTool } = proxyActivities<FloorActivities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '30 seconds', retry: { maximumAttempts: 3 } });
const { runTool: runToolLocally } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });

export const floorTurnUpdate = defineUpdate<string, [string]>('turn');
export const floorCloseSignal = defineSignal('close');

export interface FloorInput {
  workspace: string;
  model: string;
  /** The tools offered to the model (Keel's built-in tools; the client reads them once). */
  tools: Anthropic.Tool[];
  /** The tools run as local activities (Keel's: the definitions' `local`, read_file and list_dir). */
  localTools?: string[];
}

export async function floorSession(input: FloorInput): Promise<number> {
  let closed = false;
  let turns = 0;
  setHandler(floorCloseSignal, () => {
    closed = true;
  });
  setHandler(floorTurnUpdate, async (text) => {
    // Only the current turn goes to the model: the floor keeps no conversation.
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: text }];
    for (;;) {
      const reply = await floorModel({ model: input.model, messages, tools: input.tools });
      messages.push({ role: 'assistant', content: reply.content });
      const uses = reply.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      if (uses.length === 0) {
        turns++;
        return reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      }
      const results: Anthropic.ToolResultBlockParam[] = [];
      for (const use of uses) {
        const request = { workspace: input.workspace, tool: use.name, input: use.input };
        // Keel's way: a local read past its budget (machines/local-budget.ts; a starved machine) runs as an activity.
        const result = input.localTools?.includes(use.name)
          ? await runToolLocally(request).catch((error: unknown) => {
              if (isLocalBudgetExceeded(error)) return runTool(request);
              throw error;
            })
          : await runTool(request);
        results.push({ type: 'tool_result', tool_use_id: use.id, content: result.content, is_error: result.is_error });
      }
      messages.push({ role: 'user', content: results });
    }
  });
  await condition(() => closed && allHandlersFinished());
  return turns;
}
