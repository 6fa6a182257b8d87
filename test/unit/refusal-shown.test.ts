// A task that failed because the worker refused to run its command says so, wherever a
// person looks: the evidence (machines/evidence.ts, from the result's facts, never its
// text), the task's line in the live view, the report; and a goal the demo cannot finish
// (blocked on a failed task) is cancelled with that reason instead of waiting for ever.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { GoalHandle } from '../../client/goal-handle';
import { followGoal, reportLines } from '../../client/cli/goal-view';
import { Output } from '../../client/cli/output';
import { EMPTY_EVIDENCE, foldEvidence } from '../../machines/evidence';
import type { LogEvent } from '../../machines/events';
import { toolRefused } from '../../machines/tool-result';
import type { GoalResult } from '../../workflows/goal';

function captured(): { out: Output; text: () => string } {
  let text = '';
  const sink = new Writable({
    write: (chunk: Buffer, _enc, done) => {
      text += chunk.toString();
      done();
    },
  });
  return { out: new Output(false, sink as unknown as NodeJS.WriteStream), text: () => text };
}

const refusal = toolRefused('run_command', 'sandbox_unavailable', 'commands cannot run: the sandbox is unavailable on this worker (bwrap failed)');

describe('a refused command', () => {
  it('is evidence of its own kind: "run_command refused: sandbox unavailable", from the facts', () => {
    expect(refusal.content).toMatch(/^run_command refused: sandbox unavailable — commands cannot run/);
    expect({ isError: refusal.is_error, facts: refusal.facts }).toEqual({ isError: true, facts: { kind: 'refused', reason: 'sandbox_unavailable' } });
    const events: LogEvent[] = [
      { kind: 'tool.call', callId: 'c1', toolName: 'run_command', arguments: { command: 'node --test' } as never },
      { kind: 'tool.result', callId: 'c1', status: 'error', output: refusal.content, facts: refusal.facts! },
      // The same words in a result's text, without the fact, prove nothing.
      { kind: 'tool.call', callId: 'c2', toolName: 'run_command', arguments: { command: 'echo' } as never },
      { kind: 'tool.result', callId: 'c2', status: 'error', output: 'run_command refused: sandbox unavailable' },
    ];
    const { evidence } = events.reduce(foldEvidence, EMPTY_EVIDENCE);
    expect(evidence.commands).toEqual([
      { command: 'node --test', exitCode: null, status: 'error', refused: 'run_command refused: sandbox unavailable' },
      { command: 'echo', exitCode: null, status: 'error' },
    ]);
  });

  it('is on the failed task line and in the report; a blocked goal is cancelled with that reason when nobody can resolve it', async () => {
    const cancelled: string[] = [];
    const result = {
      verdict: 'stopped',
      summary: 'cancelled: blocked on tests',
      tasks: [{ id: 'tests', status: 'failed', attempts: 2, details: { filesChanged: ['t.mjs'], commands: [{ command: 'node --test', exitCode: null, status: 'error', refused: 'run_command refused: sandbox unavailable' }], summary: null } }],
      usage: { inputTokens: 1, outputTokens: 1 },
      cost: 0,
      planVersion: 1,
      reviews: [],
    } as unknown as GoalResult;
    const goal = {
      id: 'goal-1',
      async *events() {
        yield { topic: 'events', data: { kind: 'plan.task_completed', goalId: 'goal-1', taskId: 'tests', outcome: 'failed', result: 'the tests did not pass', evidence: ['file changed: t.mjs', 'command: node --test → run_command refused: sandbox unavailable'], attempt: 2 } };
        yield { topic: 'events', data: { kind: 'plan.blocked', goalId: 'goal-1', taskIds: ['tests'] } };
        yield { topic: 'events', data: { kind: 'plan.stopped', reason: 'cancelled' } };
      },
      cancel: async (reason: string) => void cancelled.push(reason),
      result: async () => result,
    } as unknown as GoalHandle;
    const { out, text } = captured();
    await followGoal(goal, { out, yes: true, ask: null, whenBlocked: 'cancel' });
    expect(text()).toMatch(/✘ \[tests\] failed: the tests did not pass \(run_command refused: sandbox unavailable\)/);
    expect(text()).toMatch(/blocked on tests: the tests did not pass \(run_command refused: sandbox unavailable\); nobody here can resolve a failed task, so the goal is cancelled/);
    expect(cancelled).toEqual(['blocked on tests: the tests did not pass (run_command refused: sandbox unavailable)']);
    expect(reportLines(result, out).join('\n')).toMatch(/tests\s+failed\s+2\s+t\.mjs, `node --test` → run_command refused: sandbox unavailable/);
  });

  it('a live view that can wait (keel goal, keel watch) does not cancel a blocked goal', async () => {
    const cancelled: string[] = [];
    const goal = {
      id: 'goal-2',
      async *events() {
        yield { topic: 'events', data: { kind: 'plan.blocked', goalId: 'goal-2', taskIds: ['tests'] } };
        yield { topic: 'events', data: { kind: 'plan.stopped', reason: 'cancelled elsewhere' } };
      },
      cancel: async (reason: string) => void cancelled.push(reason),
      result: async () => ({ verdict: 'stopped' }),
    } as unknown as GoalHandle;
    const { out, text } = captured();
    await followGoal(goal, { out, yes: true, ask: null });
    expect(cancelled).toEqual([]);
    expect(text()).toMatch(/blocked on tests: resolve with the SDK \(resolveTask\) or cancel with keel cancel goal-2/);
  });
});
