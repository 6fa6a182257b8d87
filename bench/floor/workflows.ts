// The floor: the least a Temporal workflow can do for the same conversation. A session is
// one workflow; a message is an update whose handler runs the turn (model call, tool
// calls, model call…) and returns the final text. No event log, no stream, no policy, no
// budget: whatever Keel costs above this is the price of what it records. With `localTools`
// (the `floor-local` variant) it runs those tools as local activities, as Keel does. For the
// `responsive` scenario it does what a user needs there and no more: a message posted while a
// turn runs gets its own turn after it, an interrupt cancels the turn running, and the model
// call streams (`stream`) so that it takes as long as Keel's and can be cancelled.
import { allHandlersFinished, CancellationScope, condition, defineQuery, defineSignal, defineUpdate, isCancellation, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type Anthropic from '@anthropic-ai/sdk';
import type { FloorActivities } from './activities';
import { isLocalBudgetExceeded } from '../../machines/local-budget';

const { floorModel } = proxyActivities<FloorActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 3 } });
// Keel's model call heartbeats, so a cancel reaches it; so does this one.
const { floorStreamModel } = proxyActivities<FloorActivities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '10 seconds', retry: { maximumAttempts: 3 } });
const { runTool } = proxyActivities<FloorActivities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '30 seconds', retry: { maximumAttempts: 3 } });
const { runTool: runToolLocally } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });

export const floorTurnUpdate = defineUpdate<string, [string]>('turn');
export const floorPostUpdate = defineUpdate<{ messageId: string }, [string]>('post');
export const floorInterruptUpdate = defineUpdate<void, []>('interrupt');
export const floorStateQuery = defineQuery<{ running: boolean; queueLength: number }>('state');
export const floorCloseSignal = defineSignal('close');
/** What the `turn` update answers for a turn an interrupt ended. */
export const FLOOR_INTERRUPTED = '[interrupted]';

export interface FloorInput {
  workspace: string;
  model: string;
  /** The tools offered to the model (Keel's built-in tools; the client reads them once). */
  tools: Anthropic.Tool[];
  /** The tools run as local activities (Keel's: the definitions' `local`, read_file and list_dir). */
  localTools?: string[];
  /** The model call streams (and heartbeats), as Keel's does. */
  stream?: boolean;
}

export async function floorSession(input: FloorInput): Promise<number> {
  let closed = false;
  let turns = 0;
  setHandler(floorCloseSignal, () => {
    closed = true;
  });
  const queue: string[] = [];
  let posted = 0;
  let running = false;
  let current: CancellationScope | undefined;
  const callModel = input.stream ? floorStreamModel : floorModel;
  const turn = async (text: string): Promise<string> => {
    // One turn at a time, as a session runs them (two waiters woken in one activation: the
    // first takes it, the second waits again).
    while (running) await condition(() => !running);
    running = true;
    // Only the responsive scenario's sessions (`stream`) can be interrupted: the others' turns
    // stay as lean as they were (a scope is a few promises more a turn).
    current = input.stream ? new CancellationScope() : undefined;
    try {
      return await (current ? current.run(() => steps(text)) : steps(text));
    } catch (error) {
      if (isCancellation(error)) return FLOOR_INTERRUPTED;
      throw error;
    } finally {
      running = false;
      current = undefined;
    }
  };
  const steps = async (text: string): Promise<string> => {
    // Only the current turn goes to the model: the floor keeps no conversation.
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: text }];
    for (;;) {
      const reply = await callModel({ model: input.model, messages, tools: input.tools });
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
  };
  setHandler(floorTurnUpdate, turn);
  setHandler(floorPostUpdate, (text) => {
    queue.push(text);
    return { messageId: String(++posted) };
  });
  setHandler(floorInterruptUpdate, () => current?.cancel());
  setHandler(floorStateQuery, () => ({ running, queueLength: queue.length }));
  // A posted message gets its own turn once the one running ends.
  for (;;) {
    await condition(() => queue.length > 0 || (closed && allHandlersFinished()));
    const next = queue.shift();
    if (next === undefined) return turns;
    await turn(next);
  }
}
