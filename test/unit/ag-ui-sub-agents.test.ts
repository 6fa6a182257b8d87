// AG-UI shows a session's sub-agents as steps of the run (server/ag-ui.ts AgUiMapper): a
// STEP_STARTED named for the child when it starts, a STEP_FINISHED when it ends, and steps still
// open when the run ends (an approval's interrupt) are finished before RUN_FINISHED, as AG-UI's
// event order asks. A child that ends in a later run of the thread is a step of that run.
import { EventType, type BaseEvent } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import { describe, expect, it } from 'vitest';
import { AgUiMapper } from '../../server/ag-ui';
import type { SessionStreamItem } from '../../client/events';

const matcher = { turnId: 'turn-1', see: () => undefined, attach: () => undefined };
const mapper = () => new AgUiMapper({ threadId: 'th', runId: 'run' }, matcher as never);
const item = (data: Record<string, unknown>): SessionStreamItem => ({ topic: 'events', offset: 0, data }) as unknown as SessionStreamItem;
const started = (label: string) => item({ kind: 'subagent.started', callId: `call-${label}`, agentId: `s/agent-call-${label}`, label, agentType: null, fork: false, depth: 1 });
const finished = (label: string) => item({ kind: 'subagent.finished', callId: `call-${label}`, agentId: `s/agent-call-${label}`, label, outcome: 'succeeded', summary: 'ok', usage: {}, steps: 1 });
const brief = (events: BaseEvent[]) => events.map((e) => `${e.type}${'stepName' in e ? `:${String(e.stepName)}` : ''}`);

describe('AG-UI: sub-agents as steps', () => {
  it('a step per child, named for it, started and finished', () => {
    const m = mapper();
    const events = [started('research-1'), started('fork-2'), finished('fork-2'), finished('research-1')].flatMap((i) => m.map(i));
    expect(brief(events)).toEqual(['STEP_STARTED:research-1', 'STEP_STARTED:fork-2', 'STEP_FINISHED:fork-2', 'STEP_FINISHED:research-1']);
    for (const e of events) expect(() => EventSchemas.parse(e)).not.toThrow();
  });

  it('an interrupt finishes the open steps before RUN_FINISHED; the next run shows the child ending', () => {
    const m = mapper();
    const first = [...m.map(started('reviewer-1')), ...m.map(item({ kind: 'tool.approval_requested', callId: 'toolu_v1', toolName: 'run_command', policyReason: 'reviewer-1 wants to run `npm test`' }))];
    expect(brief(first)).toEqual(['STEP_STARTED:reviewer-1', 'STEP_FINISHED:reviewer-1', EventType.RUN_FINISHED]);
    const next = mapper().map(finished('reviewer-1'));
    expect(brief(next)).toEqual(['STEP_STARTED:reviewer-1', 'STEP_FINISHED:reviewer-1']);
  });
});
