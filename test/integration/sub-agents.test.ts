// Sub-agents (docs/sub-agents.md), end to end with the stand-in, a real worker and the dev
// server: a session's model calls `agent` three times in one message — a type from the
// workspace's .keel/agents/ file, a type from the session's options, and a fork — and the three
// run as child workflows side by side (overlap read from Temporal's start and close times), two
// wait for approvals answered through the parent session, their answers come back as tool
// results, and the parent's usage is everything the model was billed for. Then the refusals,
// each a tool error the parent's model reads and goes on from: the per-message cap, a tool the
// parent lacks, a malformed agent file, a child over its budget, a call past the depth cap.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { eventsQuery } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

type Block = { type: string; tool_use_id?: string; content?: unknown; is_error?: boolean };
type Body = { system?: unknown; messages?: { role: string; content: unknown }[] };

const agentCall = (id: string, input: Record<string, unknown>) => ({ type: 'tool_use' as const, name: 'agent', id, input });

/** The tool_result blocks of the last message of a request. */
function resultsOf(body: unknown): Block[] {
  const last = (body as Body).messages?.at(-1);
  return Array.isArray(last?.content) ? (last.content as Block[]).filter((b) => b.type === 'tool_result') : [];
}

describe('sub-agents', () => {
  it('three agent calls run in parallel as child workflows, approvals go through the parent, usage adds up; refusals are tool errors', { timeout: 120_000 }, async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // ---- turn 1: three children ----
        { name: 'parent delegates', match: { lastUserContains: 'please delegate' }, reply: { content: [
          agentCall('toolu_p1', { description: 'survey the repo', prompt: 'RESEARCH TASK', subagent_type: 'research' }),
          agentCall('toolu_p2', { description: 'review the change', prompt: 'REVIEW TASK', subagent_type: 'reviewer' }),
          agentCall('toolu_p3', { description: 'try the other approach', prompt: 'FORK TASK', fork: true }),
        ] } },
        { name: 'parent sums up', match: { lastUserContains: 'REVIEW DONE', systemContains: 'PARENT' }, reply: say('All three answered.') },
        { name: 'research lists', match: { systemContains: 'RESEARCHER', hasToolResults: false }, reply: use('list_dir', {}, 'toolu_r1') },
        { name: 'research answers', match: { systemContains: 'RESEARCHER', hasToolResults: true }, reply: say('Research: the repo has notes.txt.') },
        { name: 'reviewer runs', match: { systemContains: 'REVIEWER', hasToolResults: false }, reply: use('run_command', { command: 'echo reviewed' }, 'toolu_v1') },
        { name: 'reviewer answers', match: { systemContains: 'REVIEWER', hasToolResults: true }, reply: say('REVIEW DONE: looks fine.') },
        { name: 'fork runs', match: { lastUserContains: 'FORK TASK' }, reply: use('run_command', { command: 'echo forked' }, 'toolu_f1') },
        { name: 'fork answers', match: { lastUserContains: 'forked', hasToolResults: true, systemContains: 'PARENT' }, reply: say('Fork: the other approach works.') },
        // ---- turn 2: refusals ----
        { name: 'parent errs', match: { lastUserContains: 'now the errors' }, reply: { content: [
          agentCall('toolu_e1', { description: 'broken type', prompt: 'X', subagent_type: 'broken' }),
          agentCall('toolu_e2', { description: 'lacking tool', prompt: 'X', tools: ['read_file', 'deploy_prod'] }),
          agentCall('toolu_e3', { description: 'tiny budget', prompt: 'TINY TASK', subagent_type: 'tiny' }),
          agentCall('toolu_e4', { description: 'nest', prompt: 'NEST TASK' }),
          agentCall('toolu_e5', { description: 'one too many', prompt: 'X' }),
        ] } },
        { name: 'parent goes on', match: { lastUserContains: 'agent refused', systemContains: 'PARENT' }, reply: say('Noted the refusals.') },
        { name: 'nest delegates', match: { lastUserContains: 'NEST TASK' }, reply: use('agent', { description: 'deeper', prompt: 'DEEPER TASK' }, 'toolu_n1') },
        { name: 'deeper delegates', match: { lastUserContains: 'DEEPER TASK' }, reply: use('agent', { description: 'deepest', prompt: 'DEEPEST TASK' }, 'toolu_n2') },
        { name: 'deeper sees the cap', match: { lastUserContains: 'depth cap is 2' }, reply: say('DEEPER: refused at the depth cap.') },
        { name: 'nest answers', match: { lastUserContains: 'DEEPER: refused' }, reply: say('NEST: done.') },
        // ---- turn 3: an interrupt of the parent cancels its child ----
        { name: 'parent starts a slow one', match: { lastUserContains: 'then stop' }, reply: use('agent', { description: 'slow', prompt: 'SLOW TASK' }, 'toolu_s1') },
        { name: 'slow waits', match: { lastUserContains: 'SLOW TASK' }, reply: use('run_command', { command: 'echo slow' }, 'toolu_s2') },
      ],
    });
    await mkdir(path.join(s.workspace, '.keel', 'agents'), { recursive: true });
    await writeFile(path.join(s.workspace, '.keel', 'agents', 'research.md'), '---\ndescription: Surveys the repository\ntools: [list_dir, read_file]\nmaxSteps: 4\n---\nYou are RESEARCHER. Look, do not touch.\n');
    await writeFile(path.join(s.workspace, '.keel', 'agents', 'broken.md'), '---\ndescription: Broken\ntools: read_file\ncolour: blue\n---\nBody.\n');
    await writeFile(path.join(s.workspace, 'notes.txt'), 'hello\n');
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({
        workspace: s.workspace,
        system: 'You are PARENT.',
        policy: { mode: 'ask' },
        // The hour-long cache: a fork must mark its (the parent's) prefix with the same TTL.
        promptCacheTtl: '1h',
        agents: {
          maxPerTurn: 4,
          types: {
            reviewer: { description: 'Reviews a change and runs its checks', system: 'You are REVIEWER.', tools: ['read_file', 'run_command'] },
            tiny: { description: 'Has almost no budget', system: 'You are TINY.', limits: { inputTokens: 10 } },
          },
        },
      });
      const sessionId = session.workflowHandle.workflowId;
      const turn = session.send('please delegate');

      // Two children wait for approval; both are shown as the session's, labelled with the child.
      const pending = await waitUntil(() => session.pendingApprovals(), (p) => p.length === 2, 60_000, 'the children\'s approvals in the parent');
      const byCall = Object.fromEntries(pending.map((p) => [p.callId, p]));
      expect(byCall.toolu_v1?.reason).toMatch(/^reviewer-\d wants to run `echo reviewed`/);
      expect(byCall.toolu_f1?.reason).toMatch(/^fork-\d wants to run `echo forked`/);
      expect(byCall.toolu_v1?.agent).toEqual({ agentId: `${sessionId}/agent-toolu_p2`, label: expect.stringMatching(/^reviewer-/) as unknown, parentCallId: 'toolu_p2' });
      // All three started before any answer is given (the research child may have finished already).
      const childIds = ['toolu_p1', 'toolu_p2', 'toolu_p3'].map((c) => `${sessionId}/agent-${c}`);
      await waitUntil(() => Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).describe().then(() => true, () => false))), (ok) => ok.every(Boolean), 30_000, 'three children started');
      await session.approve('toolu_v1');
      await session.approve('toolu_f1', { scope: 'session' });
      const result = await turn;
      expect(result.outcome).toBe('completed');
      expect(result.output).toBe('All three answered.');

      // Run side by side: every child started before the first one closed (Temporal's times).
      const described = await Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).describe()));
      const starts = described.map((d) => d.startTime.getTime());
      const closes = described.map((d) => d.closeTime?.getTime() ?? Number.POSITIVE_INFINITY);
      expect(described.map((d) => d.status.name)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
      expect(Math.max(...starts)).toBeLessThan(Math.min(...closes));
      expect(described.map((d) => d.searchAttributes.KeelKind)).toEqual([['agent'], ['agent'], ['agent']]);

      // The answers and an account of what each did came back as the three tool results.
      const requests = s.standin.requests;
      const summing = requests.find((r) => r.rule === 'parent sums up');
      expect(summing).toBeDefined();
      const results: Record<string, Block> = Object.fromEntries(resultsOf(summing!.body).map((b): [string, Block] => [b.tool_use_id ?? '', b]));
      expect(results.toolu_p1?.content).toMatch(/^Research: the repo has notes.txt.\n\n\[research-\d: 2 steps, .*commands run: none\]/s);
      expect(results.toolu_p2?.content).toMatch(/REVIEW DONE: looks fine\.[\s\S]*commands run: `echo reviewed` \(exit 0\)/);
      expect(results.toolu_p3?.content).toMatch(/Fork: the other approach works\./);
      expect(Object.values(results).every((b: Block) => b.is_error !== true)).toBe(true);
      // The types' tools only (in the parent's order; no agent tool, since the types do not list it); the fork all of its parent's (the same stored definitions).
      const toolsOf = (rule: string) => ((requests.find((r) => r.rule === rule)!.body as { tools?: { name: string }[] }).tools ?? []).map((t) => t.name);
      expect(toolsOf('research lists')).toEqual(['read_file', 'list_dir']);
      expect(toolsOf('reviewer runs')).toEqual(['read_file', 'run_command']);
      expect(toolsOf('fork runs')).toEqual(toolsOf('parent delegates'));
      // The fork read its parent's prefix from the cache.
      const forkUsage = requests.find((r) => r.rule === 'fork runs')!.usage!;
      expect(forkUsage.cache_read_input_tokens).toBeGreaterThan(0);
      const ttlsOf = (rule: string) => [...JSON.stringify(requests.find((r) => r.rule === rule)!.body).matchAll(/"cache_control":\{[^}]*\}/g)].map((m) => m[0]);
      expect(ttlsOf('parent delegates').length).toBeGreaterThan(0);
      expect(ttlsOf('fork runs')).toEqual(ttlsOf('parent delegates').map(() => '"cache_control":{"type":"ephemeral","ttl":"1h"}'));

      // The parent's usage is everything billed: its own calls and its children's.
      const state = await session.state();
      const billed = requests.filter((r) => r.usage !== null).reduce((n, r) => n + r.usage!.input_tokens + (r.usage!.cache_read_input_tokens ?? 0) + (r.usage!.cache_creation_input_tokens ?? 0), 0);
      const billedOut = requests.filter((r) => r.usage !== null).reduce((n, r) => n + r.usage!.output_tokens, 0);
      expect(state.usage.usage.inputTokens).toBe(billed);
      expect(state.usage.usage.outputTokens).toBe(billedOut);
      const childUsage = await Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).result() as Promise<{ usage: { outputTokens: number } }>));
      const parentOwnOut = requests.filter((r) => r.rule === 'parent delegates' || r.rule === 'parent sums up').reduce((n, r) => n + r.usage!.output_tokens, 0);
      expect(state.usage.usage.outputTokens).toBe(parentOwnOut + childUsage.reduce((n, c) => n + c.usage.outputTokens, 0));

      // The children's events in the parent's stream, under the calls that started them.
      const { entries } = await session.workflowHandle.query(eventsQuery, { from: 0, limit: 500 });
      const started = entries.flatMap((e) => (e.kind === 'subagent.started' ? [e.callId] : []));
      expect(started.sort()).toEqual(['toolu_p1', 'toolu_p2', 'toolu_p3']);
      expect(entries.some((e) => e.kind === 'subagent.tool' && e.callId === 'toolu_p2' && e.command === 'echo reviewed')).toBe(true);

      // ---- the refusals: each a tool error; the parent goes on ----
      const second = await session.send('now the errors');
      expect(second.outcome).toBe('completed');
      expect(second.output).toBe('Noted the refusals.');
      const goesOn = s.standin.requests.find((r) => r.rule === 'parent goes on');
      const errors: Record<string, Block> = Object.fromEntries(resultsOf(goesOn!.body).map((b): [string, Block] => [b.tool_use_id ?? '', b]));
      expect(errors.toolu_e1).toMatchObject({ is_error: true, content: expect.stringMatching(/agent refused: \.keel\/agents\/broken\.md: .*tools/) as unknown });
      expect(errors.toolu_e2).toMatchObject({ is_error: true, content: expect.stringContaining('"deploy_prod" is not one of them') as unknown });
      expect(errors.toolu_e3).toMatchObject({ is_error: true, content: expect.stringContaining('failed (it ran out of its budget)') as unknown });
      expect(errors.toolu_e4).toMatchObject({ content: expect.stringContaining('NEST: done.') as unknown });
      expect(errors.toolu_e4?.is_error).not.toBe(true);
      expect(errors.toolu_e5).toMatchObject({ is_error: true, content: expect.stringContaining('at most 4 agent calls in one message (maxPerTurn)') as unknown });
      // The grandchild's refusal named the depth cap.
      const deeper = s.standin.requests.find((r) => r.rule === 'deeper sees the cap');
      expect(resultsOf(deeper!.body)[0]?.content).toMatch(/the depth cap is 2 \(maxDepth\)/);

      // ---- an interrupt of the parent cancels its child, within a second ----
      const third = session.send('then stop');
      await waitUntil(() => session.pendingApprovals(), (p) => p.some((a) => a.callId === 'toolu_s2'), 30_000, 'the slow child waiting');
      const interruptedAt = Date.now();
      await session.interrupt('enough');
      const slow = env.client.workflow.getHandle(`${sessionId}/agent-toolu_s1`);
      const closed = await waitUntil(() => slow.describe(), (d) => d.status.name !== 'RUNNING', 10_000, 'the slow child closed');
      expect(closed.status.name).toBe('CANCELLED');
      expect(closed.closeTime!.getTime() - interruptedAt).toBeLessThan(1_000);
      expect((await third).outcome).toBe('interrupted');
      await waitUntil(() => session.pendingApprovals(), (p) => p.length === 0, 10_000, 'no approval left waiting');

      await session.close();
      await recordHistory(session.workflowHandle, 'sub-agents');
      // The children's own histories: one answered through its parent, a fork, one that delegated in turn.
      await recordHistory(env.client.workflow.getHandle(`${sessionId}/agent-toolu_p2`), 'sub-agents-child-approval');
      await recordHistory(env.client.workflow.getHandle(`${sessionId}/agent-toolu_p3`), 'sub-agents-fork');
      await recordHistory(env.client.workflow.getHandle(`${sessionId}/agent-toolu_e4`), 'sub-agents-nested');
    });
  });

  it('maxAlive counts the session\'s whole tree: a grandchild past it is refused naming the cap, and its place comes free when one ends; a steer reaches a child', { timeout: 120_000 }, async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'parent grows a tree', match: { lastUserContains: 'grow a tree' }, reply: use('agent', { description: 'tree', prompt: 'TREE TASK' }, 'toolu_t1') },
        { name: 'parent sees the tree', match: { lastUserContains: 'TREE: done' }, reply: say('The tree answered.') },
        { name: 'child after the third', match: { lastUserContains: 'LEAF THREE DONE' }, reply: say('TREE: done') },
        { name: 'child after the refusal', match: { lastUserContains: 'maxAlive' }, reply: use('agent', { description: 'third leaf', prompt: 'LEAF THREE' }, 'toolu_g3') },
        { name: 'child delegates twice', match: { lastUserContains: 'TREE TASK' }, reply: { content: [
          agentCall('toolu_g1', { description: 'leaf one', prompt: 'LEAF ONE' }),
          agentCall('toolu_g2', { description: 'leaf two', prompt: 'LEAF TWO' }),
        ] } },
        { name: 'leaf three', match: { lastUserContains: 'LEAF THREE' }, reply: say('LEAF THREE DONE') },
        { name: 'leaf answers', match: { lastUserContains: 'leaf-', hasToolResults: true }, reply: say('LEAF DONE') },
        { name: 'leaf one runs', match: { lastUserContains: 'LEAF ONE' }, reply: use('run_command', { command: 'echo leaf-one' }, 'toolu_c1') },
        { name: 'leaf two runs', match: { lastUserContains: 'LEAF TWO' }, reply: use('run_command', { command: 'echo leaf-two' }, 'toolu_c2') },
      ],
    });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      // Two alive in the whole tree: the session's child and one grandchild. Counted per parent,
      // the child's two grandchildren would both start (the child has none alive of its own).
      const session = await keel.startSession({ workspace: s.workspace, system: 'You are PARENT.', policy: { mode: 'ask' }, agents: { maxAlive: 2 } });
      const turn = session.send('grow a tree');
      // One grandchild runs (and waits for its command's approval); the other was refused.
      const [waiting] = await waitUntil(() => session.pendingApprovals(), (p) => p.length === 1, 60_000, 'one grandchild waiting');
      // Steering a child: the session's human addresses the running child by its label; the
      // text reaches that child's next model call (not the session's). A name that is no
      // running child is refused, naming it.
      await session.steer('STEER FOR THE CHILD', { agent: 'agent-1' });
      await expect(session.steer('nobody there', { agent: 'research-9' })).rejects.toThrow(/no sub-agent "research-9" of this session is running/);
      await session.approve(waiting!.callId);
      const result = await turn;
      expect(result.outcome).toBe('completed');
      expect(result.output).toBe('The tree answered.');
      const requests = s.standin.requests;
      const refusedAt = requests.find((r) => r.rule === 'child after the refusal');
      const leafResults = resultsOf(refusedAt!.body);
      expect(leafResults).toHaveLength(2);
      const refused = leafResults.filter((b) => b.is_error === true);
      expect(refused).toHaveLength(1);
      expect(refused[0]!.content).toMatch(/agent refused: 2 sub-agents of this session are running \(all depths\), the cap is 2 \(maxAlive\)/);
      expect(leafResults.find((b) => b.is_error !== true)?.content).toMatch(/^LEAF DONE/);
      expect(JSON.stringify(refusedAt!.body)).toContain('STEER FOR THE CHILD');
      expect(requests.filter((r) => r.rule?.startsWith('parent') === true && JSON.stringify(r.body).includes('STEER FOR THE CHILD'))).toEqual([]);
      // Only the granted one ran; the refused one's command never did.
      expect(requests.filter((r) => r.rule === 'leaf one runs' || r.rule === 'leaf two runs')).toHaveLength(1);
      // Its place came free when it ended: the third grandchild started and answered.
      const third = requests.find((r) => r.rule === 'child after the third');
      expect(resultsOf(third!.body)[0]).toMatchObject({ content: expect.stringMatching(/^LEAF THREE DONE/) as unknown });
      expect(resultsOf(third!.body)[0]?.is_error).not.toBe(true);
      await session.close();
      await recordHistory(session.workflowHandle, 'sub-agents-tree-alive');
      await recordHistory(env.client.workflow.getHandle(`${session.workflowHandle.workflowId}/agent-toolu_t1`), 'sub-agents-tree-alive-child');
    });
  });
});
