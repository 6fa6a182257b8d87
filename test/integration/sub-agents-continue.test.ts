// A session whose history passes its continue-as-new threshold while its children run
// (docs/sub-agents.md "Durable: worker loss and continue-as-new"): the children run inside the
// turn, so the session continues as new right after that turn, with every child's result,
// usage and cost carried — the new run's usage is the sum of every billed call, its cost the
// sum of their prices — no child lost or run twice, and the next turn (and its child) runs on
// the new run, its label going on from the earlier run's. And the children's steps do not land
// in the parent's history one by one: a child reports only what its parent shows.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { costOf, DEFAULT_PRICES } from '../../activities/llm-pricing';
import { KeelClient } from '../../client/index';
import { eventsQuery } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();
const EventType = proto.temporal.api.enums.v1.EventType;

type Block = { type: string; tool_use_id?: string; content?: unknown; is_error?: boolean };
const agentCall = (id: string, type: string) => ({ type: 'tool_use' as const, name: 'agent', id, input: { description: `${type} part`, prompt: `${type.toUpperCase()} TASK`, subagent_type: type } });
/** A child: one command (a line in the ledger), then CHILD_LISTS list_dir steps, then its answer. */
const CHILD_LISTS = 3;
const childRules = (name: string) => [
  { name: `${name} runs`, match: { systemContains: name.toUpperCase(), turn: 1 }, reply: use('run_command', { command: `echo ${name} >> ledger.txt` }, `toolu_${name}_cmd`) },
  ...Array.from({ length: CHILD_LISTS }, (_, k) => ({ name: `${name} lists ${k + 1}`, match: { systemContains: name.toUpperCase(), turn: k + 2 }, reply: use('list_dir', {}, `toolu_${name}_ls${k}`) })),
  { name: `${name} answers`, match: { systemContains: name.toUpperCase(), turn: CHILD_LISTS + 2 }, reply: say(`${name.toUpperCase()} DONE`) },
];
const names = ['alpha', 'beta', 'gamma', 'delta'] as const;

describe('sub-agents and continue-as-new', () => {
  it('a parent past its history threshold while children run continues as new right after the turn, carrying every child\'s usage and cost; the next turn runs on the new run', { timeout: 60_000 }, async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'parent delegates', match: { systemContains: 'PARENT', lastUserContains: 'please delegate' }, reply: { content: [agentCall('toolu_p1', 'alpha'), agentCall('toolu_p2', 'beta'), agentCall('toolu_p3', 'gamma')] } },
        { name: 'parent sums up', match: { systemContains: 'PARENT', lastUserContains: 'GAMMA DONE' }, reply: say('All three answered.') },
        { name: 'parent delegates again', match: { systemContains: 'PARENT', lastUserContains: 'once more' }, reply: { content: [agentCall('toolu_p4', 'delta')] } },
        { name: 'parent goes on', match: { systemContains: 'PARENT', lastUserContains: 'DELTA DONE' }, reply: say('The fourth answered.') },
        ...names.flatMap(childRules),
        // An interrupt while a child runs a command: the child's spend reaches the parent all the same.
        { name: 'parent starts a slow one', match: { systemContains: 'PARENT', lastUserContains: 'then stop' }, reply: { content: [agentCall('toolu_p5', 'slow')] } },
        { name: 'slow runs', match: { systemContains: 'SLOW' }, reply: use('run_command', { command: 'echo started > started.txt; sleep 30' }, 'toolu_slow_cmd') },
      ],
    });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({
        workspace: s.workspace,
        system: 'You are PARENT.',
        policy: { mode: 'full-auto' },
        // The lowest threshold: the parent's history passes it while its three children run.
        continueAsNewAfterEvents: 20,
        agents: { types: Object.fromEntries([...names, 'slow'].map((n) => [n, { description: `the ${n} part`, system: `You are ${n.toUpperCase()}.` }])) },
      });
      const sessionId = session.workflowHandle.workflowId;
      const firstRunId = (await session.workflowHandle.describe()).runId;

      const first = await session.send('please delegate');
      expect(first.outcome).toBe('completed');
      expect(first.output).toBe('All three answered.');

      // Right after that turn, the run continued as new.
      const firstRun = env.client.workflow.getHandle(sessionId, firstRunId);
      await waitUntil(() => firstRun.describe(), (d) => d.status.name === 'CONTINUED_AS_NEW', 15_000, 'the first run continued as new');
      const events = (await firstRun.fetchHistory()).events ?? [];
      const typeOf = (e: (typeof events)[number]) => EventType[e.eventType ?? 0] ?? '';
      expect(typeOf(events.at(-1)!)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
      // One turn in that run, and the threshold passed while the children ran (before the last one answered).
      expect(events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'sendMessage')).toHaveLength(1);
      const lastChildDone = events.findLastIndex((e) => typeOf(e) === 'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED');
      const firstChildStart = events.findIndex((e) => typeOf(e) === 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED');
      expect(firstChildStart).toBeLessThan(20);
      expect(lastChildDone + 1).toBeGreaterThanOrEqual(20);
      // The children's steps did not land in the parent's history one by one: each child ran
      // 1 + CHILD_LISTS tools and 2 + CHILD_LISTS model calls; the parent heard at most one
      // report from each (its one command, shown in the parent's stream), and three closes.
      const reports = events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'agentReport');
      expect(reports.length).toBeLessThanOrEqual(3);
      expect(events.filter((e) => typeOf(e) === 'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED')).toHaveLength(3);

      // No child lost or run twice: each closed once, completed, its command in the ledger once.
      const childIds = ['toolu_p1', 'toolu_p2', 'toolu_p3'].map((c) => `${sessionId}/agent-${c}`);
      const described = await Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).describe()));
      expect(described.map((d) => d.status.name)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
      expect((await readFile(path.join(s.workspace, 'ledger.txt'), 'utf8')).trim().split('\n').sort()).toEqual(['alpha', 'beta', 'gamma']);
      const summing = s.standin.requests.filter((r) => r.rule === 'parent sums up');
      expect(summing).toHaveLength(1);
      const results = ((summing[0]!.body as { messages: { content: Block[] }[] }).messages.at(-1)!.content).filter((b) => b.type === 'tool_result');
      expect(results.map((b) => b.tool_use_id).sort()).toEqual(['toolu_p1', 'toolu_p2', 'toolu_p3']);
      expect(results.every((b) => b.is_error !== true)).toBe(true);

      // The new run's usage is every billed call's, the parent's own and its children's: carried whole.
      const billed = () => {
        const used = s.standin.requests.filter((r) => r.usage !== null);
        return {
          inputTokens: used.reduce((n, r) => n + r.usage!.input_tokens + (r.usage!.cache_read_input_tokens ?? 0) + (r.usage!.cache_creation_input_tokens ?? 0), 0),
          outputTokens: used.reduce((n, r) => n + r.usage!.output_tokens, 0),
          costUsd: used.reduce((n, r) => n + costOf(String((r.body as { model: string }).model), r.usage!, DEFAULT_PRICES)!.total, 0),
        };
      };
      const children = await Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).result() as Promise<{ usage: { inputTokens: number; outputTokens: number; costUsd: number } }>));
      const childrenOut = children.reduce((n, c) => n + c.usage.outputTokens, 0);
      const ownOut = s.standin.requests.filter((r) => r.rule?.startsWith('parent') === true).reduce((n, r) => n + r.usage!.output_tokens, 0);
      const after = await session.state();
      expect(after.run).toBe(2);
      const expected = billed();
      expect(after.usage.usage.inputTokens).toBe(expected.inputTokens);
      expect(after.usage.usage.outputTokens).toBe(expected.outputTokens);
      expect(after.usage.usage.outputTokens).toBe(ownOut + childrenOut);
      expect(after.usage.usage.costUsd).toBeCloseTo(expected.costUsd, 9);
      expect(after.usage.usage.costUsd).toBeGreaterThan(children.reduce((n, c) => n + c.usage.costUsd, 0));
      expect(after.usage.perTurn?.map((t) => t.usage?.outputTokens)).toEqual([ownOut + childrenOut]);

      // The next turn, and its child, on the new run; the child's label goes on from the earlier run's.
      const second = await session.send('once more');
      expect(second.outcome).toBe('completed');
      expect(second.output).toBe('The fourth answered.');
      const delta = await env.client.workflow.getHandle(`${sessionId}/agent-toolu_p4`).describe();
      expect(delta.status.name).toBe('COMPLETED');
      expect(delta.parentExecution?.runId).not.toBe(firstRunId);
      const { entries } = await session.workflowHandle.query(eventsQuery, { from: 0, limit: 500 });
      expect(entries.flatMap((e) => (e.kind === 'subagent.started' ? [e.label] : []))).toEqual(['alpha-1', 'beta-2', 'gamma-3', 'delta-4']);
      // Each child's command in the parent's stream once, under its call.
      expect(entries.flatMap((e) => (e.kind === 'subagent.tool' ? [`${e.callId} ${e.command}`] : [])).sort()).toEqual(['toolu_p1', 'toolu_p2', 'toolu_p3', 'toolu_p4'].map((c, i) => `${c} echo ${names[i]} >> ledger.txt`));
      const total = await session.state();
      const all = billed();
      expect(total.usage.usage.inputTokens).toBe(all.inputTokens);
      expect(total.usage.usage.outputTokens).toBe(all.outputTokens);
      expect(total.usage.usage.costUsd).toBeCloseTo(all.costUsd, 9);

      // Interrupted while its child runs a command: the child is cancelled, and what it spent (its
      // model call) is counted after the call ended, from its last report.
      const third = session.send('then stop');
      await waitUntil(() => readFile(path.join(s.workspace, 'started.txt'), 'utf8').catch(() => ''), (t) => t.includes('started'), 30_000, 'the slow child\'s command running');
      await session.interrupt('enough');
      expect((await third).outcome).toBe('interrupted');
      const slow = await waitUntil(() => env.client.workflow.getHandle(`${sessionId}/agent-toolu_p5`).describe(), (d) => d.status.name !== 'RUNNING', 10_000, 'the slow child closed');
      expect(slow.status.name).toBe('CANCELLED');
      expect(s.standin.requests.filter((r) => r.rule === 'slow runs')).toHaveLength(1);
      const settled = await waitUntil(() => session.state(), (st) => st.usage.usage.outputTokens === billed().outputTokens, 10_000, 'the cancelled child\'s spend counted');
      expect(settled.usage.usage.inputTokens).toBe(billed().inputTokens);
      expect(settled.usage.usage.costUsd).toBeCloseTo(billed().costUsd, 9);

      await recordHistory(firstRun, 'sub-agents-continue-as-new');
      await recordHistory(env.client.workflow.getHandle(`${sessionId}/agent-toolu_p5`), 'sub-agents-quiet-child-cancelled');
      await recordHistory(env.client.workflow.getHandle(`${sessionId}/agent-toolu_p1`), 'sub-agents-quiet-child');
      await session.close();
    });
  });
});
