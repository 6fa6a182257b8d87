// What a turn does with the model's answer: run the tools it asks for, call it again
// (steers, pause_turn, a larger limit, a compaction), or end the turn (end_turn, limits,
// truncation, refusal).
import { addCallUsage } from '../budget';
import type { ContentBlock } from '../conversation';
import { emit } from '../events';
import { maxCallAttempts } from '../model-retry';
import { createToolCall, toolCallMachine, type ToolCallEvent, type ToolCallState } from '../tool-call';
import type { TurnEvent } from './protocol';
import type { TurnState } from './state';
import { append, callModel, commonOf, complete, fail, note, stepLimit, turnExhaustion, type Common, type D, type Out } from './steps';
import { advance, countResults, finishOf, recordFinish, resultBlocks } from './tools';

export function onModelResponse(state: Extract<TurnState, { status: 'calling_llm' }>, event: Extract<TurnEvent, { type: 'model_response' }>): Out {
  const content: ContentBlock[] = event.content;
  const text = content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
  const stopReason = event.stopReason ?? null;
  const turnId = state.config.turnId;
  // Every billed token counts, whatever happens to the answer.
  const spent: Common = { ...commonOf(state), usage: addCallUsage(state.usage, event.usage) };
  const exhaustion = turnExhaustion(spent.config.limits, spent.usage);
  const escalated = { raised: state.raised, compacted: state.compacted, continuation: state.continuation };
  const attemptsLeft = state.attempt < maxCallAttempts(state.config.retryRow ?? 'turn');

  // The request did not fit: compact and try once more; never the same request again.
  if (stopReason === 'model_context_window_exceeded') {
    if (state.compacted === true || !attemptsLeft) {
      const message = 'the conversation exceeds the context window even after compaction';
      return fail(spent, state.step, state.attempt, message, message, 'non_retryable');
    }
    if (exhaustion !== null) return complete(spent, state.step, 'budget_exhausted', stopReason, exhaustion, []);
    return callModel(spent, state.step, state.attempt + 1, [emit('turn.continued', { turnId, step: state.step, why: 'context_window', maxTokens: null })], {
      ...escalated,
      compacted: true,
      compact: true,
    });
  }
  // A refusal ends the turn; nothing the model did not say goes into the conversation.
  if (stopReason === 'refusal') {
    const refusal = event.refusal ?? { category: null, explanation: null };
    const refused: Common = { ...spent, text: text === '' ? null : text };
    return complete(refused, state.step, 'refused', stopReason, null, [emit('turn.refused', { turnId, step: state.step, ...refusal }), { type: 'rollback_turn' }], refusal);
  }
  // Cut inside a tool call: its input is broken JSON. Once a step, ask again with a larger
  // limit (a different request); otherwise the turn ends `truncated`.
  if (event.cutToolUse !== undefined) {
    const raised = spent.config.raisedMaxTokens ?? null;
    if (state.raised !== true && raised !== null && exhaustion === null && attemptsLeft) {
      return callModel(spent, state.step, state.attempt + 1, [emit('turn.continued', { turnId, step: state.step, why: 'max_tokens', maxTokens: raised })], {
        ...escalated,
        raised: true,
      });
    }
    // Only what is whole is kept: text and thinking, not tool calls nobody will answer.
    const kept = content.filter((b) => b.type !== 'tool_use');
    const out: D[] = kept.length > 0 ? [append({ role: 'assistant', content: kept })] : [];
    out.push(emit('turn.truncated', { turnId, step: state.step, inToolUse: true, maxTokens: state.raised === true ? raised : (spent.config.maxTokens ?? null) }));
    const truncated: Common = { ...spent, text: text === '' ? state.text : text };
    return complete(truncated, state.step, exhaustion !== null ? 'budget_exhausted' : 'truncated', stopReason, exhaustion, out);
  }

  const c: Common = { ...spent, text: text === '' ? state.text : text };
  const uses = content.flatMap((b) => (b.type === 'tool_use' ? [b] : []));
  // A paused answer goes back as the request's final assistant turn, which the API refuses
  // with trailing whitespace (a 400 that would end the turn): it goes back without it.
  const paused = uses.length === 0 && stopReason === 'pause_turn' ? withoutTrailingWhitespace(content) : content;
  // An empty answer stays empty: no made-up text goes back to the model.
  const out: D[] = paused.length > 0 ? [append({ role: 'assistant', content: paused })] : [];

  if (uses.length === 0 && stopReason === 'max_tokens') {
    out.push(emit('turn.truncated', { turnId, step: state.step, inToolUse: false, maxTokens: state.raised === true ? (c.config.raisedMaxTokens ?? null) : (c.config.maxTokens ?? null) }));
    return complete(c, state.step, exhaustion !== null ? 'budget_exhausted' : 'truncated', stopReason, exhaustion, out);
  }
  // A paused long-running turn: send the answer back as it is and the model goes on.
  if (uses.length === 0 && stopReason === 'pause_turn' && content.length > 0 && exhaustion === null) {
    const limit = stepLimit(c, state.step);
    if (limit !== null) return complete(c, state.step, 'max_steps', stopReason, limit, out);
    out.push(emit('turn.continued', { turnId, step: state.step + 1, why: 'pause_turn', maxTokens: null }));
    return callModel(c, state.step + 1, 1, out, { continuation: true });
  }

  if (uses.length === 0) {
    if (exhaustion !== null) return complete(c, state.step, 'budget_exhausted', stopReason, exhaustion, out);
    if (c.steers.length === 0) return complete(c, state.step, 'end_turn', stopReason, null, out);
    const limit = stepLimit(c, state.step);
    if (limit !== null) return complete(c, state.step, 'max_steps', stopReason, limit, out);
    out.push(append({ role: 'user', content: c.steers.map((t) => ({ type: 'text', text: t })) }));
    out.push(emit('turn.steer_applied', { turnId: c.config.turnId, step: state.step + 1, count: c.steers.length }));
    return callModel({ ...c, steers: [] }, state.step + 1, 1, out);
  }

  out.push(emit('turn.tool_calls_received', { turnId: c.config.turnId, step: state.step, callIds: uses.map((u) => u.id) }));
  const calls: ToolCallState[] = [];
  for (const use of uses) {
    const kind = use.name === c.config.askTool ? 'ask' : c.config.finishTool != null && use.name === c.config.finishTool ? 'finish' : 'tool';
    const created = createToolCall({
      callId: use.id,
      name: use.name,
      input: use.input,
      readOnly: kind === 'tool' && c.config.readOnlyTools.includes(use.name),
      kind,
      approvalTimeoutMs: c.config.approvalTimeoutMs,
    });
    out.push(...created.directives);
    let call = created.state;
    if (kind === 'finish') {
      // Recorded even when the budget ran out in this answer: it is the agent's report of work already done.
      const recorded = recordFinish(call);
      out.push(...recorded.directives);
      calls.push(recorded.call);
      continue;
    }
    const followUp: ToolCallEvent | null =
      exhaustion !== null
        ? { type: 'cancel', reason: `not run, the ${exhaustion.limit} budget is exhausted` }
        : kind === 'ask'
          ? { type: 'policy_decided', decision: 'allow', reason: 'asking the user needs no approval' }
          : null;
    if (followUp !== null) {
      const r = toolCallMachine.transition(call, followUp);
      if (r.ok) {
        call = r.state;
        out.push(...r.directives);
      }
    }
    calls.push(call);
  }
  if (exhaustion !== null) {
    // The tool_use blocks are already stored: answer them so the conversation stays valid.
    out.push(append({ role: 'user', content: resultBlocks(calls) }, note('(Stopped: the budget is exhausted.)')));
    return complete({ ...c, toolStats: countResults(c.toolStats, calls) }, state.step, 'budget_exhausted', stopReason, exhaustion, out, null, finishOf(calls));
  }
  return advance({ status: 'executing_tools', ...c, step: state.step, calls }, calls, out);
}

/** The content with its last text block's trailing whitespace cut (the block dropped if nothing is left of it). */
function withoutTrailingWhitespace(content: ContentBlock[]): ContentBlock[] {
  const last = content.at(-1);
  if (last?.type !== 'text' || last.text.trimEnd() === last.text) return content;
  const trimmed = last.text.trimEnd();
  return trimmed === '' ? content.slice(0, -1) : [...content.slice(0, -1), { ...last, text: trimmed }];
}
