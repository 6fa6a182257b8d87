// The rules moved out of the goal and agent workflows (issue 15): how a task's outcome is
// decided (finish_task), what counts as evidence (tool facts), and the bounded planner /
// critic answer retries. Each test fails when its rule is removed or changed.
import { describe, expect, it } from 'vitest';
import { afterFailedRound, afterUnusableAnswer, ANSWER_ROUNDS } from '../../../machines/answer-retry';
import { commandEnding, EMPTY_EVIDENCE, foldEvidence, type EvidenceState } from '../../../machines/evidence';
import type { LogEvent } from '../../../machines/events';
import { createTurn, turnMachine, type ContentBlock, type TurnDirective, type TurnEvent, type TurnResult, type TurnState } from '../../../machines/index';
import { decideTaskOutcome, FINISH_TASK, parseFinishTask } from '../../../machines/task-outcome';
import { accepted, kinds, ofType } from './helpers';

const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.01 };
const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({ type: 'tool_use', id, name, input: input as never });
const respond = (content: ContentBlock[]): TurnEvent => ({ type: 'model_response', content, stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage });

function drive(state: TurnState, ...evs: TurnEvent[]): { state: TurnState; directives: TurnDirective[] } {
  const directives: TurnDirective[] = [];
  for (const ev of evs) {
    const r = accepted(turnMachine.transition(state, ev));
    state = r.state;
    directives.push(...r.directives);
  }
  return { state, directives };
}
const agentTurn = () => createTurn({ turnId: 'task-x:turn', readOnlyTools: ['read_file'], finishTool: FINISH_TASK });
const finished = (ds: readonly TurnDirective[]): TurnResult | undefined => ofType(ds, 'finish')[0]?.result;

describe('finish_task ends a task agent’s turn', () => {
  it('a valid finish_task completes the turn at once with the agent’s status and summary, and no further model call', () => {
    const started = drive(agentTurn(), { type: 'start', text: 'do it' });
    const { state, directives } = drive(started.state, respond([{ type: 'text', text: 'All done.' }, use('f1', FINISH_TASK, { status: 'succeeded', summary: 'wrote a.txt' })]));
    expect(state.status).toBe('completed');
    expect(ofType(directives, 'call_model')).toEqual([]);
    expect(ofType(directives, 'run_tool')).toEqual([]);
    expect(finished(directives)).toMatchObject({ outcome: 'completed', finish: { status: 'succeeded', summary: 'wrote a.txt' } });
    // The tool_use is answered in the stored conversation, so it stays a valid request.
    const answers = ofType(directives, 'append_messages').flatMap((d) => d.messages).filter((m) => m.role === 'user');
    expect(JSON.stringify(answers)).toContain('"tool_use_id":"f1"');
    expect(kinds(directives)).toEqual(expect.arrayContaining(['tool.call', 'tool.result', 'turn.completed']));
  });

  it('the step’s other tools finish first; then the turn ends without calling the model', () => {
    const started = drive(agentTurn(), { type: 'start', text: 'do it' });
    const asked = drive(started.state, respond([use('w1', 'write_file', { path: 'a.txt', content: 'a' }), use('f1', FINISH_TASK, { status: 'failed', summary: 'cannot' })]));
    expect(asked.state.status).toBe('executing_tools');
    const policy = drive(asked.state, { type: 'tool', callId: 'w1', event: { type: 'policy_decided', decision: 'allow' } });
    expect(ofType(policy.directives, 'run_tool')).toHaveLength(1);
    const done = drive(policy.state, { type: 'tool', callId: 'w1', event: { type: 'succeeded', output: 'Wrote a.txt' } });
    expect(done.state.status).toBe('completed');
    expect(ofType(done.directives, 'call_model')).toEqual([]);
    expect(finished(done.directives)?.finish).toEqual({ status: 'failed', summary: 'cannot' });
  });

  it('an invalid finish_task goes back to the model as a tool error and the turn goes on', () => {
    const started = drive(agentTurn(), { type: 'start', text: 'do it' });
    const { state, directives } = drive(started.state, respond([use('f1', FINISH_TASK, { status: 'done' })]));
    expect(state.status).toBe('calling_llm');
    expect(ofType(directives, 'call_model')).toHaveLength(1);
    const result = directives.flatMap((d) => (d.type === 'emit_event' && d.event.kind === 'tool.result' ? [d.event] : []));
    expect(result).toMatchObject([{ callId: 'f1', status: 'error', output: expect.stringContaining('status') as string }]);
  });

  it('a session turn (no finish tool configured) treats finish_task as an ordinary tool', () => {
    const turn = createTurn({ turnId: 's1' });
    const { state, directives } = drive(turn, { type: 'start', text: 'hi' }, respond([use('f1', FINISH_TASK, { status: 'succeeded', summary: 'x' })]));
    expect(state.status).toBe('executing_tools');
    expect(ofType(directives, 'check_policy')).toHaveLength(1);
  });
});

describe('task outcome (machines/task-outcome.ts)', () => {
  const turn = (t: Partial<Parameters<typeof decideTaskOutcome>[0]>) => decideTaskOutcome({ outcome: 'completed', error: null, finalOutput: null, ...t });

  it('finish_task decides: its status and its summary', () => {
    expect(turn({ finish: { status: 'succeeded', summary: 'built and tested' } })).toEqual({ outcome: 'succeeded', summary: 'built and tested', agentSummary: 'built and tested' });
    expect(turn({ finish: { status: 'failed', summary: 'the API is down' }, finalOutput: 'Sorry.' })).toMatchObject({ outcome: 'failed', summary: 'the API is down' });
  });

  it('a turn that completed without finish_task failed, whatever its text says', () => {
    const decided = turn({ finalOutput: 'All done, everything works!' });
    expect(decided.outcome).toBe('failed');
    expect(decided.summary).toMatch(/without calling finish_task/);
    expect(decided.agentSummary).toBe('All done, everything works!');
    // The old text prefix means nothing now.
    expect(turn({ finalOutput: 'TASK FAILED: x' }).summary).toMatch(/without calling finish_task/);
  });

  it('an agent started before finish_task existed (not offered it) is judged by the text rule it was given', () => {
    const legacy = (t: Partial<Parameters<typeof decideTaskOutcome>[0]>) =>
      decideTaskOutcome({ outcome: 'completed', error: null, finalOutput: null, ...t }, { finishTaskOffered: false });
    expect(legacy({ finalOutput: 'All done.' })).toMatchObject({ outcome: 'succeeded', summary: 'All done.' });
    expect(legacy({ finalOutput: 'TASK FAILED: the API is down' })).toMatchObject({ outcome: 'failed', summary: 'the API is down' });
    expect(legacy({ outcome: 'max_steps' })).toMatchObject({ outcome: 'failed', summary: "the agent's turn ended max_steps" });
  });

  it('a turn that stopped early failed with the reason', () => {
    expect(turn({ outcome: 'max_steps' })).toMatchObject({ outcome: 'failed', summary: "the agent's turn ended max_steps" });
    expect(turn({ outcome: 'failed', error: 'ModelBadRequest: bad' })).toMatchObject({ outcome: 'failed', summary: "the agent's turn ended failed: ModelBadRequest: bad" });
  });

  it('checks the model’s finish_task input', () => {
    expect(parseFinishTask({ status: 'succeeded', summary: 'ok' })).toEqual({ ok: true, value: { status: 'succeeded', summary: 'ok' } });
    const bad = parseFinishTask({ status: 'done', summary: '', extra: 1 });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems.join('\n')).toMatch(/status[\s\S]*summary/);
  });
});

describe('evidence (machines/evidence.ts)', () => {
  const fold = (...events: LogEvent[]): EvidenceState => events.reduce(foldEvidence, EMPTY_EVIDENCE);
  const call = (callId: string, toolName: string, args: Record<string, unknown>): LogEvent => ({ kind: 'tool.call', callId, toolName, arguments: args as never });

  it('files changed come from the files_changed facts of successful writes, once each', () => {
    const e = fold(
      call('1', 'write_file', { path: 'ignored-arg.txt' }),
      { kind: 'tool.result', callId: '1', status: 'success', output: 'Wrote', facts: { kind: 'files_changed', filesChanged: ['a.txt'] } },
      { kind: 'tool.result', callId: '2', status: 'success', output: 'Edited', facts: { kind: 'files_changed', filesChanged: ['a.txt', 'b.txt'] } },
      { kind: 'tool.result', callId: '3', status: 'error', output: 'no', facts: { kind: 'files_changed', filesChanged: ['c.txt'] } },
    );
    expect(e.evidence.filesChanged).toEqual(['a.txt', 'b.txt']);
  });

  it('commands and exit codes come from the command facts, never from the text', () => {
    const e = fold(
      call('1', 'run_command', { command: 'npm test' }),
      // The text says exit code 0; the facts say 3: the facts win.
      { kind: 'tool.result', callId: '1', status: 'error', output: '$ npm test\n[exit code 0]', facts: { kind: 'command', command: 'npm test', exitCode: 3, timedOut: false, bytes: 10, lines: 1 } },
      call('2', 'run_command', { command: ['rm', '-rf', 'x'] }),
      { kind: 'tool.result', callId: '2', status: 'denied', output: 'Denied' },
      call('3', 'read_file', { path: 'a' }),
      { kind: 'tool.result', callId: '3', status: 'success', output: 'x', facts: { kind: 'read', bytes: 1, files: 1 } },
    );
    expect(e.evidence.commands).toEqual([
      { command: 'npm test', exitCode: 3, status: 'error' },
      { command: 'rm -rf x', exitCode: null, status: 'denied' },
    ]);
    expect(e.pending).toEqual({});
  });

  it('a command stopped at a sandbox limit is evidence of that limit, in the words every report uses', () => {
    const e = fold(
      call('1', 'run_command', { command: 'make' }),
      { kind: 'tool.result', callId: '1', status: 'limit', output: '[limit: …]', facts: { kind: 'command', command: 'make', exitCode: 2, timedOut: false, bytes: 1, lines: 1, limit: 'memory' } },
    );
    expect(e.evidence.commands).toEqual([{ command: 'make', exitCode: 2, status: 'limit', limit: 'memory' }]);
    expect(e.evidence.commands.map(commandEnding)).toEqual(['limit: stopped at its memory limit']);
    expect(commandEnding({ exitCode: 3, status: 'error' })).toBe('exit code 3');
    expect(commandEnding({ exitCode: null, status: 'denied' })).toBe('denied');
  });
});

describe('planner / critic answer retries (machines/answer-retry.ts)', () => {
  it('waits 1, 2, 3, 5, 10, 20, then 30 s between rounds, or the retry-after when longer', () => {
    const delays = Array.from({ length: ANSWER_ROUNDS - 1 }, (_, i) => afterFailedRound(i + 1, { retryable: true }).next);
    expect(delays.map((d) => (d.type === 'retry' ? d.delayMs : null))).toEqual([1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
    // About three minutes of a failing API before the goal stops (seed 80023's 7 faults in a row fit).
    expect(delays.reduce((sum, d) => sum + (d.type === 'retry' ? d.delayMs : 0), 0)).toBe(191_000);
    expect(afterFailedRound(1, { retryable: true, retryAfterMs: 12_000 }).next).toEqual({ type: 'retry', round: 2, delayMs: 12_000 });
    expect(afterFailedRound(3, { retryable: true, retryAfterMs: 500 }).next).toEqual({ type: 'retry', round: 4, delayMs: 3_000 });
  });

  it(`gives up after ${ANSWER_ROUNDS} rounds, and at once on a failure that is not retryable`, () => {
    expect(afterFailedRound(ANSWER_ROUNDS - 1, { retryable: true }).next.type).toBe('retry');
    expect(afterFailedRound(ANSWER_ROUNDS, { retryable: true }).next).toEqual({ type: 'give_up' });
    expect(afterFailedRound(1, { retryable: false }).next).toEqual({ type: 'give_up' });
    // Another round of the same request cannot fix these, whatever the flag says.
    for (const failureClass of ['malformed', 'fatal', 'context_window'] as const) expect(afterFailedRound(1, { retryable: true, failureClass }).next).toEqual({ type: 'give_up' });
    for (const failureClass of ['overloaded', 'transient'] as const) expect(afterFailedRound(1, { retryable: true, failureClass }).next.type).toBe('retry');
  });

  it('counts what a failed round was billed for, retried or not', () => {
    const spent = { inputTokens: 100, outputTokens: 7, costUsd: null };
    expect(afterFailedRound(1, { retryable: true, usage: spent }).spent).toEqual({ inputTokens: 100, outputTokens: 7, costUsd: 0, unpricedCalls: 1 });
    expect(afterFailedRound(1, { retryable: false, usage: { ...spent, costUsd: 0.5 } }).spent).toMatchObject({ inputTokens: 100, costUsd: 0.5, unpricedCalls: 0 });
    expect(afterFailedRound(1, { retryable: true }).spent).toBeNull();
  });

  it('an unusable review is asked again with its problems up to the limit of answers, and its usage counts every time', () => {
    const u = { inputTokens: 10, outputTokens: 5, costUsd: 0.01 };
    expect(afterUnusableAnswer(1, 3, ['verdict: invalid'], u)).toEqual({
      spent: { inputTokens: 10, outputTokens: 5, costUsd: 0.01, unpricedCalls: 0 },
      next: { type: 'ask_again', attempt: 2, errors: ['verdict: invalid'] },
    });
    const last = afterUnusableAnswer(3, 3, ['tasks: cycle'], u);
    expect(last.next).toEqual({ type: 'give_up', error: 'no usable review after 3 answers: tasks: cycle' });
    expect(last.spent.inputTokens).toBe(10);
  });
});

describe('tool facts travel with the result', () => {
  it('a tool result’s facts reach the tool.result event (what the evidence folds)', () => {
    const started = drive(createTurn({ turnId: 's1' }), { type: 'start', text: 'run it' }, respond([use('c1', 'run_command', { command: 'false' })]));
    const allowed = drive(started.state, { type: 'tool', callId: 'c1', event: { type: 'policy_decided', decision: 'allow' } });
    const facts = { kind: 'command' as const, command: 'false', exitCode: 1, timedOut: false, bytes: 0, lines: 0 };
    const done = drive(allowed.state, { type: 'tool', callId: 'c1', event: { type: 'failed', error: '$ false\n[exit code 1]', facts } });
    const results = done.directives.flatMap((d) => (d.type === 'emit_event' && d.event.kind === 'tool.result' ? [d.event] : []));
    expect(results).toEqual([{ kind: 'tool.result', callId: 'c1', status: 'error', output: '$ false\n[exit code 1]', facts }]);
  });
});
