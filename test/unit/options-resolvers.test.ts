// The one resolver of options per workflow kind (workflows/session-options.ts,
// goal-options.ts, agent.ts): each fills every default, keeps every value given (false, 0-free
// numbers and null included), is idempotent — a run that continued as new resolves options
// already resolved — and gives options its own start schema accepts (they are the next run's
// input). The machines started from resolved options are the ones started from the options
// as given, so resolving changed no running behaviour.
import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createGoal } from '../../machines/autonomy';
import { defaultPolicy } from '../../machines/policy';
import { createSession } from '../../machines/session';
import { resolveAgentInput } from '../../workflows/agent';
import type { AgentInput } from '../../workflows/protocol/agent';
import { resolveGoalOptions } from '../../workflows/goal-options';
import { resolveSessionOptions } from '../../workflows/session-options';
import { goalOptionsSchema, type GoalOptions } from '../../workflows/protocol/goal';
import { sessionOptionsSchema, type SessionOptions } from '../../workflows/protocol/session';

const nullableMs = fc.option(fc.integer({ min: 1, max: 10_000_000 }), { nil: null });
const limit = fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: null });

const sessionOptions: fc.Arbitrary<SessionOptions> = fc.record(
  {
    workspace: fc.constantFrom('/w', '/srv/work/', '/tmp/a b'),
    workspaceHost: fc.constantFrom('build-1', 'h'),
    workspaceHostWaitMs: fc.integer({ min: 1, max: 600_000 }),
    model: fc.constantFrom('claude-haiku-4-5', 'claude-opus-4-1'),
    maxTokens: fc.integer({ min: 1, max: 64_000 }),
    system: fc.string(),
    headless: fc.boolean(),
    limits: fc.record({ inputTokens: limit, outputTokens: limit, costUsd: limit, turns: fc.option(fc.integer({ min: 1, max: 99 }), { nil: null }) }, { requiredKeys: [] }),
    maxConsecutiveErrors: fc.integer({ min: 1, max: 20 }),
    approvalTimeoutMs: nullableMs,
    idleTimeoutMs: nullableMs,
    maxParallelTools: fc.integer({ min: 1, max: 64 }),
    retryBackoffMs: fc.array(fc.nat(5000), { maxLength: 4 }),
    mcp: fc.boolean(),
    storeDir: fc.constantFrom('/store', '/srv/keel'),
    continueAsNewAfterTurns: nullableMs,
    continueAsNewWhenSuggested: fc.boolean(),
    compactAboveTokens: fc.integer({ min: 1, max: 200_000 }),
    promptCaching: fc.boolean(),
    promptCacheTtl: fc.constantFrom('5m' as const, '1h' as const),
    authenticatedControls: fc.boolean(),
  },
  { requiredKeys: ['workspace'] },
);

const goalOptions: fc.Arbitrary<GoalOptions> = fc.record(
  {
    goal: fc.constantFrom('Make the tests pass.', 'Write a README.'),
    workspace: fc.constantFrom('/w', '/srv/work/'),
    workspaceHost: fc.constantFrom('build-1'),
    workspaceHostWaitMs: fc.integer({ min: 1, max: 600_000 }),
    model: fc.constantFrom('claude-haiku-4-5'),
    maxTokens: fc.integer({ min: 1, max: 64_000 }),
    headless: fc.boolean(),
    autoApprove: fc.boolean(),
    maxConcurrency: fc.integer({ min: 1, max: 64 }),
    maxTaskAttempts: fc.integer({ min: 1, max: 100 }),
    maxPlanAttempts: fc.integer({ min: 1, max: 100 }),
    maxReviewCycles: fc.integer({ min: 1, max: 100 }),
    planApprovalTimeoutMs: nullableMs,
    limits: fc.record({ inputTokens: limit, outputTokens: limit, costUsd: limit, wallClockMs: fc.option(fc.integer({ min: 1, max: 1e7 }), { nil: null }) }, { requiredKeys: [] }),
    maxStepsPerTask: fc.integer({ min: 1, max: 200 }),
    approvalTimeoutMs: nullableMs,
    maxParallelTools: fc.integer({ min: 1, max: 64 }),
    storeDir: fc.constantFrom('/store'),
    maxTasks: fc.integer({ min: 1, max: 10_000 }),
    continueAsNewAfterEvents: fc.option(fc.integer({ min: 20, max: 100_000 }), { nil: null }),
    continueAsNewWhenSuggested: fc.boolean(),
    thinking: fc.constant({ budgetTokens: 2048 }),
    authenticatedControls: fc.boolean(),
  },
  { requiredKeys: ['goal', 'workspace'] },
);

describe('resolveSessionOptions', () => {
  it('fills every default from the options that name none', () => {
    expect(resolveSessionOptions({ workspace: '/w/' })).toEqual({
      workspace: '/w/',
      workspaceHostWaitMs: 60_000,
      model: 'claude-sonnet-4-6',
      maxTokens: 4096,
      headless: false,
      limits: { inputTokens: null, outputTokens: null, costUsd: null, stepsPerTurn: null, turns: null, wallClockMs: null },
      maxConsecutiveErrors: 3,
      approvalTimeoutMs: null,
      idleTimeoutMs: null,
      maxParallelTools: 4,
      mcp: false,
      storeDir: '/w/.keel/store',
      continueAsNewAfterTurns: null,
      continueAsNewWhenSuggested: true,
      authenticatedControls: false,
    });
  });

  it('keeps every value given, fills the rest, is idempotent, and its result is a valid start input', () => {
    fc.assert(
      fc.property(sessionOptions, (options) => {
        const resolved = resolveSessionOptions(options);
        for (const [key, value] of Object.entries(options)) {
          if (key === 'limits') expect(resolved.limits).toMatchObject(value as object);
          else expect(resolved[key as keyof SessionOptions]).toEqual(value);
        }
        // Nothing the resolver defaults is left undefined.
        for (const key of Object.keys(resolveSessionOptions({ workspace: '/w' }))) expect(resolved[key as keyof SessionOptions]).not.toBeUndefined();
        expect(resolveSessionOptions(resolved)).toEqual(resolved);
        expect(sessionOptionsSchema.safeParse(resolved).success).toBe(true);
      }),
    );
  });

  it('starts the same session machine as the options as given', () => {
    fc.assert(
      fc.property(sessionOptions, (options) => {
        const resolved = resolveSessionOptions(options);
        const init = (o: SessionOptions) => createSession({ sessionId: 's', at: 0, limits: o.limits, maxConsecutiveErrors: o.maxConsecutiveErrors, idleTimeoutMs: o.idleTimeoutMs ?? null });
        expect(init(resolved)).toEqual(init(options));
      }),
    );
  });
});

describe('resolveGoalOptions', () => {
  it('fills every default from the options that name none', () => {
    expect(resolveGoalOptions({ goal: 'g', workspace: '/w' })).toEqual({
      goal: 'g',
      workspace: '/w',
      workspaceHostWaitMs: 60_000,
      model: 'claude-sonnet-4-6',
      maxTokens: 4096,
      headless: false,
      autoApprove: false,
      maxConcurrency: 2,
      maxTaskAttempts: 2,
      maxPlanAttempts: 3,
      maxReviewCycles: 3,
      planApprovalTimeoutMs: null,
      limits: { inputTokens: null, outputTokens: null, costUsd: null, wallClockMs: null },
      maxStepsPerTask: 25,
      approvalTimeoutMs: null,
      maxParallelTools: 4,
      storeDir: '/w/.keel/store',
      maxTasks: 50,
      continueAsNewAfterEvents: null,
      continueAsNewWhenSuggested: true,
      authenticatedControls: false,
    });
  });

  it('keeps every value given, fills the rest, is idempotent, and its result is a valid start input', () => {
    fc.assert(
      fc.property(goalOptions, (options) => {
        const resolved = resolveGoalOptions(options);
        for (const [key, value] of Object.entries(options)) {
          if (key === 'limits') expect(resolved.limits).toMatchObject(value as object);
          else expect(resolved[key as keyof GoalOptions]).toEqual(value);
        }
        for (const key of Object.keys(resolveGoalOptions({ goal: 'g', workspace: '/w' }))) expect(resolved[key as keyof GoalOptions]).not.toBeUndefined();
        expect(resolveGoalOptions(resolved)).toEqual(resolved);
        expect(goalOptionsSchema.safeParse(resolved).success).toBe(true);
      }),
    );
  });

  it('starts the same autonomy machine as the options as given (the plan limit was the machine default, now named)', () => {
    fc.assert(
      fc.property(goalOptions, (options) => {
        const r = resolveGoalOptions(options);
        const resolved = createGoal({ goalId: 'g', ...r });
        const asGiven = createGoal({ goalId: 'g', ...options });
        expect(resolved).toEqual({ ...asGiven, state: { ...asGiven.state, config: { maxTasks: 50, ...asGiven.state.config } } });
      }),
    );
  });
});

/** The defaults the option types' docstrings name, by option: `(default 4)`, `(default 60 s)`, `(default: forever)`… */
function documentedDefaults(file: string): Record<string, unknown> {
  const source = fs.readFileSync(new URL(`../../workflows/${file}`, import.meta.url), 'utf8');
  const found: Record<string, unknown> = {};
  for (const m of source.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*\n\s*(\w+)\??:/g)) {
    const said = /\bdefault:? ([^),;:]+)/.exec(m[1]!)?.[1]?.trim().replace(/\.$/, '');
    if (said === undefined) continue;
    const seconds = /^(\d+) s$/.exec(said);
    found[m[2]!] = seconds
      ? Number(seconds[1]) * 1000
      : ['forever', 'null', 'only when suggested'].includes(said)
        ? null
        : said === 'true' || said === 'false'
          ? said === 'true'
          : /^\d+$/.test(said)
            ? Number(said)
            : said;
  }
  return found;
}

describe('the option schemas (their types derive from them) name the default their resolver applies', () => {
  it.each([
    ['protocol/session.ts', resolveSessionOptions({ workspace: '/w' }) as Record<string, unknown>],
    ['protocol/goal.ts', resolveGoalOptions({ goal: 'g', workspace: '/w' }) as Record<string, unknown>],
  ])('%s', (file, resolved) => {
    const documented = documentedDefaults(file);
    // Given, not defaulted; and the two a docstring says in words (`<workspace>/.keel/store`, no limits), which the tests above pin.
    const defaulted = Object.keys(resolved).filter((k) => !['workspace', 'goal', 'storeDir', 'limits'].includes(k));
    expect(defaulted.length).toBeGreaterThan(10);
    for (const option of defaulted) expect([option, documented[option]]).toEqual([option, resolved[option]]);
  });
});

describe('resolveAgentInput', () => {
  const input: AgentInput = {
    goalId: 'g',
    goal: 'x',
    taskId: 't1',
    attempt: 1,
    title: 't',
    instructions: 'i',
    role: 'builder',
    workspace: '/w',
    storeDir: '/w/.keel/store',
    model: 'claude-sonnet-4-6',
    maxTokens: 4096,
    tools: [],
    toolsRef: null,
    policy: defaultPolicy,
    headless: false,
    limits: { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: 25 },
    approvalTimeoutMs: null,
    maxParallelTools: 4,
  };

  it('fills the wait for a workspace host (the goal resolved the rest), keeps a given one, and is idempotent', () => {
    expect(resolveAgentInput(input)).toEqual({ ...input, workspaceHostWaitMs: 60_000 });
    expect(resolveAgentInput({ ...input, workspaceHost: 'h', workspaceHostWaitMs: 5 })).toEqual({ ...input, workspaceHost: 'h', workspaceHostWaitMs: 5 });
    expect(resolveAgentInput(resolveAgentInput(input))).toEqual(resolveAgentInput(input));
  });
});
