// The fields several start inputs share (a session's and a goal's options, a task agent's
// input), as zod schemas: each kind's schema (./session.ts, ./goal.ts, ./agent.ts) composes
// them, and its option type is derived from that schema.
import type { ActivityOptions } from '@temporalio/workflow';
import { z } from 'zod';
import { WORKSPACE_HOST_PATTERN } from '../workspace-host';
import { lazySchema } from '../../machines/lazy-schema';

export const absolutePath = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .refine((p) => p.startsWith('/'), `${what} must be an absolute path`);
export const positiveInt = lazySchema(() => z.number().int().positive());
/** A host name as KEEL_WORKSPACE_HOST spells it (it becomes part of a task queue name). */
export const workspaceHost = lazySchema(() => z.string().regex(new RegExp(WORKSPACE_HOST_PATTERN), 'workspaceHost: letters, digits, ".", "_" and "-", at most 63, as the worker\'s KEEL_WORKSPACE_HOST'));
export const nonNegInt = lazySchema(() => z.number().int().nonnegative());
export const timeoutMs = lazySchema(() => positiveInt.nullable().optional());
/**
 * Overrides of an activity's options (tests shorten retries): an object, whose values
 * Temporal validates when the workflow schedules the activity (durations may be strings
 * like `'30s'`, which zod cannot type as Temporal's `Duration`), hence the declared type.
 */
export const activityOverrides = lazySchema(() =>
  z.custom<Partial<ActivityOptions>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), 'modelActivity must be an object of activity options').optional(),
);
export const backoff = lazySchema(() => z.array(nonNegInt).max(20).optional());
/** Extended thinking: the API's minimum budget is 1,024 tokens. */
export const thinkingBudget = lazySchema(() => z.number().int().min(1024, 'budgetTokens must be at least 1024 (the Messages API minimum)'));
/** A task agent's thinking (a goal's per role): a budget. */
export const thinking = lazySchema(() => z.strictObject({ budgetTokens: thinkingBudget }));
