// The sub-agent rules (machines/sub-agents.ts) without Temporal: the caps, the subset of tools, a
// fork's tools and model, the share of the parent's budget, the tool result the parent reads,
// the approval label; and the agent files (activities/agent-types.ts parseAgentFile).
import { describe, expect, it } from 'vitest';
import { ZERO_USAGE, type TurnLimits } from '../../../machines/budget';
import { approvalLabel, capsRefusal, childResult, DEFAULT_SUB_AGENT_CAPS, planChild, resolveCaps, type ChildRequest } from '../../../machines/sub-agents';
import { parseAgentFile } from '../../../activities/agent-types';
import { turnMachine, createTurn } from '../../../machines/turn';

const NO: TurnLimits = { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: null };
const parentTools = ['read_file', 'list_dir', 'write_file', 'run_command', 'ask_user', 'agent'];
const request = (over: Partial<ChildRequest> = {}): ChildRequest => ({
  input: { description: 'd', prompt: 'p' },
  type: null,
  depth: 0,
  caps: DEFAULT_SUB_AGENT_CAPS,
  parentTools,
  parentModel: 'claude-sonnet-4-6',
  turnLimits: NO,
  turnUsage: ZERO_USAGE,
  running: [],
  waitingThisStep: 0,
  ...over,
});

describe('sub-agent caps', () => {
  it('refuses past the depth, per-message and alive caps, naming the cap', () => {
    const caps = resolveCaps({ maxDepth: 2, maxPerTurn: 3, maxAlive: 5 });
    expect(capsRefusal({ depth: 1, caps, alive: 0, startedThisStep: 0 })).toBeNull();
    expect(capsRefusal({ depth: 2, caps, alive: 0, startedThisStep: 0 })).toMatch(/depth cap is 2 \(maxDepth\)/);
    expect(capsRefusal({ depth: 0, caps, alive: 0, startedThisStep: 3 })).toMatch(/at most 3 agent calls in one message \(maxPerTurn\)/);
    expect(capsRefusal({ depth: 0, caps, alive: 5, startedThisStep: 0 })).toMatch(/the cap is 5 \(maxAlive\)/);
  });
  it('defaults: depth 2, 4 a message, 8 alive, 20 steps', () => {
    expect(resolveCaps(undefined)).toEqual({ maxDepth: 2, maxPerTurn: 4, maxAlive: 8, maxStepsPerChild: 20 });
    expect(resolveCaps({ maxPerTurn: 2 }).maxPerTurn).toBe(2);
  });
});

describe('a child\'s tools and model', () => {
  it('gets the parent\'s tools without ask_user, with agent to delegate further', () => {
    const r = planChild(request());
    expect(r).toMatchObject({ ok: true, plan: { tools: ['read_file', 'list_dir', 'write_file', 'run_command', 'agent'], model: 'claude-sonnet-4-6', fork: false } });
  });
  it('gets the subset its type or call names, never a tool the parent lacks', () => {
    const type = { ok: true as const, type: { description: 'r', system: 's', tools: ['read_file'], model: 'claude-haiku-4-5' } };
    expect(planChild(request({ type }))).toMatchObject({ ok: true, plan: { tools: ['read_file'], model: 'claude-haiku-4-5' } });
    const lacking = planChild(request({ input: { description: 'd', prompt: 'p', tools: ['read_file', 'deploy'] } }));
    expect(lacking).toEqual({ ok: false, error: expect.stringContaining('"deploy" is not one of them') as unknown });
    // ask_user is the parent's: nobody answers a sub-agent's questions.
    expect(planChild(request({ input: { description: 'd', prompt: 'p', tools: ['ask_user'] } })).ok).toBe(false);
    // A parent without the agent tool cannot hand it on.
    expect(planChild(request({ parentTools: ['read_file'], input: { description: 'd', prompt: 'p', tools: ['agent'] } }))).toMatchObject({ ok: true, plan: { tools: [] } });
  });
  it('a fork has all of its parent\'s tools and its model, and takes no type or tools', () => {
    expect(planChild(request({ input: { description: 'd', prompt: 'p', fork: true } }))).toMatchObject({ ok: true, plan: { tools: parentTools, model: 'claude-sonnet-4-6', fork: true } });
    expect(planChild(request({ input: { description: 'd', prompt: 'p', fork: true, tools: ['read_file'] } })).ok).toBe(false);
  });
  it('a type that could not be loaded is the call\'s error', () => {
    expect(planChild(request({ type: { ok: false, error: '.keel/agents/x.md: bad' } }))).toEqual({ ok: false, error: 'agent refused: .keel/agents/x.md: bad' });
  });
});

describe('a child\'s budget', () => {
  it('is a share of what the parent\'s turn has free: less its spend, less what running children hold, split with the calls still waiting', () => {
    const turnLimits: TurnLimits = { inputTokens: 10_000, outputTokens: null, costUsd: 1, maxSteps: 30 };
    const turnUsage = { ...ZERO_USAGE, inputTokens: 2_000, costUsd: 0.2 };
    const running = [{ share: { inputTokens: 3_000, outputTokens: null, costUsd: 0.3, maxSteps: 20 }, used: { ...ZERO_USAGE, inputTokens: 1_000, costUsd: 0.1 } }];
    const r = planChild(request({ turnLimits, turnUsage, running, waitingThisStep: 1 }));
    // free input: 10 000 − 2 000 − (3 000 − 1 000) = 6 000, over 2 → 3 000; cost (1 − 0.2 − 0.2) / 2 = 0.3
    expect(r).toMatchObject({ ok: true, plan: { limits: { inputTokens: 3_000, outputTokens: null, maxSteps: 20 } } });
    expect(r.ok && r.plan.limits.costUsd).toBeCloseTo(0.3);
  });
  it('a type\'s own limits cap its share, its maxSteps its steps', () => {
    const type = { ok: true as const, type: { description: 'r', system: 's', maxSteps: 3, limits: { outputTokens: 500 } } };
    expect(planChild(request({ type, turnLimits: { ...NO, outputTokens: 10_000 } }))).toMatchObject({ ok: true, plan: { limits: { outputTokens: 500, maxSteps: 3 } } });
  });
  it('nothing free: refused', () => {
    const r = planChild(request({ turnLimits: { ...NO, costUsd: 1 }, turnUsage: { ...ZERO_USAGE, costUsd: 1 } }));
    expect(r).toEqual({ ok: false, error: expect.stringContaining('budget has nothing left') as unknown });
  });
  it('the parent\'s turn counts a child\'s spend with its result', () => {
    let state = createTurn({ turnId: 't', readOnlyTools: ['agent'] });
    const step = (event: Parameters<typeof turnMachine.transition>[1]) => {
      const r = turnMachine.transition(state, event);
      if (!r.ok) throw new Error(r.error.message);
      state = r.state;
    };
    step({ type: 'start', text: 'go' });
    step({ type: 'model_response', content: [{ type: 'tool_use', id: 'c1', name: 'agent', input: { description: 'd', prompt: 'p' } }], stopReason: 'tool_use', usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.01 } });
    step({ type: 'tool', callId: 'c1', event: { type: 'policy_decided', decision: 'allow' } });
    step({ type: 'tool', callId: 'c1', event: { type: 'succeeded', output: 'done', usage: { inputTokens: 100, outputTokens: 50, costUsd: 0.1, unpricedCalls: 0 } } });
    expect(state.usage).toMatchObject({ inputTokens: 110, outputTokens: 55 });
    expect(state.usage.costUsd).toBeCloseTo(0.11);
  });
});

describe('what the parent reads and the human sees', () => {
  const base = { label: 'research-1', summary: 'Found it.', turnOutcome: 'completed', filesChanged: ['a.txt'], commands: [{ command: 'npm test', exitCode: 0, status: 'success' }], usage: { ...ZERO_USAGE, inputTokens: 10, outputTokens: 2, costUsd: 0.001 }, steps: 2 };
  it('an answer with an account of what the child did', () => {
    expect(childResult({ ...base, outcome: 'succeeded' })).toEqual({ isError: false, content: 'Found it.\n\n[research-1: 2 steps, 10 in / 2 out tokens, $0.0010; files written: a.txt; commands run: `npm test` (exit 0)]' });
  });
  it('a failure the model can act on, saying why', () => {
    expect(childResult({ ...base, outcome: 'failed', turnOutcome: 'budget_exhausted' }).content).toMatch(/^agent research-1 failed \(it ran out of its budget\)/);
    expect(childResult({ ...base, outcome: 'failed', turnOutcome: 'max_steps' }).isError).toBe(true);
  });
  it('labels a child\'s waiting call', () => {
    expect(approvalLabel('research-1', 'run_command', { command: 'npm test' })).toBe('research-1 wants to run `npm test`');
    expect(approvalLabel('fork-2', 'write_file', { path: 'a.txt', content: '' })).toBe('fork-2 wants to write file `a.txt`');
  });
});

describe('agent files', () => {
  it('front matter and a body', () => {
    const r = parseAgentFile('research', '---\ndescription: Surveys\ntools: [read_file]\nmodel: claude-haiku-4-5\nmaxSteps: 5\nlimits:\n  costUsd: 0.5\n---\nYou look.\n');
    expect(r).toEqual({ ok: true, type: { description: 'Surveys', tools: ['read_file'], model: 'claude-haiku-4-5', maxSteps: 5, limits: { costUsd: 0.5 }, system: 'You look.' } });
  });
  it('a malformed file says what is wrong, naming the file', () => {
    expect(parseAgentFile('x', 'no front matter')).toMatchObject({ ok: false, error: expect.stringContaining('.keel/agents/x.md: no front matter') as unknown });
    expect(parseAgentFile('x', '---\ndescription: [\n---\nbody')).toMatchObject({ ok: false, error: expect.stringContaining('not valid YAML') as unknown });
    const unknownKey = parseAgentFile('x', '---\ndescription: d\ncolour: blue\n---\nbody');
    expect(unknownKey.ok).toBe(false);
    expect(!unknownKey.ok && unknownKey.error).toMatch(/colour/);
    expect(parseAgentFile('x', '---\ndescription: d\n---\n  \n')).toMatchObject({ ok: false, error: expect.stringContaining('body') as unknown });
  });
});
