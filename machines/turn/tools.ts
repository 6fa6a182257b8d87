// The tool calls of a step: which may start (read-only ones side by side, anything else
// alone), how each call's events move the step on, a task agent's finish call, and the
// calls waiting for a human.
import type { ContentBlock } from '../conversation';
import { reject } from '../core';
import { emit } from '../events';
import { parseFinishTask, type FinishTask } from '../task-outcome';
import { isTerminalCall, resultStatus, toolCallMachine, type ToolCallEvent, type ToolCallState } from '../tool-call';
import type { ToolStats, TurnState } from './state';
import { append, callModel, commonOf, complete, note, stepLimit, type Common, type D, type Out } from './steps';

export function countResults(stats: ToolStats, calls: readonly ToolCallState[]): ToolStats {
  const next = { ...stats };
  for (const call of calls) if (isTerminalCall(call)) next[resultStatus[call.status]] += 1;
  return next;
}

export function resultBlocks(calls: readonly ToolCallState[]): ContentBlock[] {
  return calls.map((call) => {
    // Callers only build the answer once every call is terminal.
    const r = isTerminalCall(call) ? call.result : { content: 'No result.', isError: true };
    return { type: 'tool_result', tool_use_id: call.callId, content: r.content, is_error: r.isError, ...('stored' in r && r.stored !== undefined ? { keel_stored: r.stored } : {}) };
  });
}

/**
 * Grant permits in the model's order. Read-only calls run side by side (up to the
 * parallel limit); any other call is a barrier: it starts only when every earlier call is
 * finished and nothing runs, and no later call starts before it finishes — so a read
 * after a write sees the write, as the model intended.
 */
function schedule(calls: readonly ToolCallState[], maxParallel: number): { calls: ToolCallState[]; directives: D[] } {
  const next = [...calls];
  const directives: D[] = [];
  let running = next.filter((c) => c.status === 'running').length;
  let earlierOpen = false;
  for (let i = 0; i < next.length; i++) {
    const call = next[i];
    if (call === undefined || isTerminalCall(call)) continue;
    const barrier = !call.readOnly;
    if (call.status === 'queued') {
      const may = barrier ? !earlierOpen && running === 0 : running < maxParallel;
      if (may) {
        const granted = toolCallMachine.transition(call, { type: 'permit_granted' });
        if (granted.ok) {
          next[i] = granted.state;
          directives.push(...granted.directives);
          running++;
        }
      }
    }
    earlierOpen = true;
    if (barrier) break;
  }
  return { calls: next, directives };
}

/** After any change to the calls: start what may start; at the boundary, answer every
 *  tool_use in one user message (plus pending steers) and call the model again. */
export function advance(state: Extract<TurnState, { status: 'executing_tools' }>, calls: ToolCallState[], directives: D[]): Out {
  const scheduled = schedule(calls, state.config.maxParallelTools);
  const out = [...directives, ...scheduled.directives];
  const c = commonOf(state);
  if (!scheduled.calls.every(isTerminalCall)) {
    return { state: { ...state, calls: scheduled.calls }, directives: out };
  }
  const done: Common = { ...c, toolStats: countResults(c.toolStats, scheduled.calls) };
  out.push(
    emit('turn.tools_finished', {
      turnId: c.config.turnId,
      step: state.step,
      results: scheduled.calls.map((call) => ({ callId: call.callId, status: isTerminalCall(call) ? resultStatus[call.status] : 'cancelled' })),
    }),
  );
  // The agent reported its task finished: its tools are answered, the model is not called again.
  const finish = finishOf(scheduled.calls);
  if (finish !== null) {
    out.push(append({ role: 'user', content: resultBlocks(scheduled.calls) }));
    return complete(done, state.step, 'end_turn', null, null, out, null, finish);
  }
  const limit = stepLimit(done, state.step);
  if (limit !== null) {
    out.push(append({ role: 'user', content: resultBlocks(scheduled.calls) }, note(`(Stopped: the limit of ${limit.allowed} steps per turn was reached.)`)));
    return complete(done, state.step, 'max_steps', null, limit, out);
  }
  const steer: ContentBlock[] = done.steers.map((text) => ({ type: 'text', text }));
  out.push(append({ role: 'user', content: [...resultBlocks(scheduled.calls), ...steer] }));
  if (steer.length > 0) out.push(emit('turn.steer_applied', { turnId: c.config.turnId, step: state.step + 1, count: steer.length }));
  return callModel({ ...done, steers: [] }, state.step + 1, 1, out);
}

/** The first finish call of the step that the turn accepted, if any. */
export function finishOf(calls: readonly ToolCallState[]): FinishTask | null {
  for (const call of calls) {
    if (call.kind !== 'finish' || call.status !== 'succeeded') continue;
    const parsed = parseFinishTask(call.input);
    if (parsed.ok) return parsed.value;
  }
  return null;
}

/** A finish call is answered by the turn itself, at once: accepted, or refused with the problems for the model to fix. */
export function recordFinish(call: ToolCallState): { call: ToolCallState; directives: D[] } {
  const parsed = parseFinishTask(call.input);
  const events: ToolCallEvent[] = [
    { type: 'policy_decided', decision: 'allow', reason: 'finishing a task needs no approval' },
    { type: 'permit_granted' },
    parsed.ok
      ? { type: 'succeeded', output: `Recorded: the task ${parsed.value.status}.` }
      : { type: 'failed', error: `invalid input for ${call.name}:\n${parsed.problems.map((p) => `- ${p}`).join('\n')}\nCall it again with status and summary.` },
  ];
  let state = call;
  const directives: D[] = [];
  for (const event of events) {
    const r = toolCallMachine.transition(state, event);
    if (!r.ok) break;
    state = r.state;
    directives.push(...r.directives);
  }
  return { call: state, directives };
}

export function onToolEvent(state: TurnState, callId: string, event: ToolCallEvent): Out {
  if (state.status !== 'executing_tools') return reject('no tools are running');
  const index = state.calls.findIndex((c) => c.callId === callId);
  const call = state.calls[index];
  if (call === undefined) return reject(`unknown tool call ${callId}`);
  const r = toolCallMachine.transition(call, event);
  if (!r.ok) return reject(r.error.message);
  const calls = [...state.calls];
  calls[index] = r.state;
  return advance(state, calls, [...r.directives]);
}

/** Calls waiting for a human decision: for the `pendingApprovals` query. */
export function pendingApprovals(state: TurnState): { callId: string; name: string; input: ToolCallState['input']; reason: string | null }[] {
  if (state.status !== 'executing_tools') return [];
  return state.calls.flatMap((c) => (c.status === 'awaiting_approval' ? [{ callId: c.callId, name: c.name, input: c.input, reason: c.reason }] : []));
}
