// Sub-agents' protocol (docs/sub-agents.md): the session option that turns the `agent` tool on
// (its caps and the types given in options), and what a parent adds to a child agent's start
// input when the child was started by an `agent` call rather than by a goal (`delegation`).
import { defineSignal } from '@temporalio/workflow';
import { z } from 'zod';
import { lazySchema } from '../../machines/lazy-schema';
import { messageSchema } from '../../machines/conversation';
import { AGENT_TYPE_NAME, agentTypeSchema, subAgentCapsSchema } from '../../machines/sub-agents';

/** Session option `agents`: present, the session's model is offered the `agent` tool. */
export const subAgentOptionsSchema = lazySchema(() =>
  subAgentCapsSchema.extend({
    /** Named agent types besides the workspace's `.keel/agents/<name>.md` (an option's type wins over a file of the same name). */
    types: z.record(z.string().regex(new RegExp(AGENT_TYPE_NAME)), agentTypeSchema).optional(),
  }),
);
export type SubAgentOptions = z.input<typeof subAgentOptionsSchema>;

/** What a child started by an `agent` call carries beyond a task agent's input. */
export const delegationSchema = lazySchema(() =>
  z.strictObject({
    /** The root session's workflow id (approvals are the session's), and the call that started this child. */
    sessionId: z.string().min(1),
    parentCallId: z.string().min(1),
    /** The name the human sees: `research-1`, `fork-2`. */
    label: z.string().min(1).max(100),
    /** 1 for a session's child, 2 for its child's. */
    depth: z.number().int().min(1),
    prompt: z.string().min(1),
    /** The system prompt: the type's, the parent's (a fork), or none. */
    system: z.string().nullable(),
    /** A fork starts from the parent's conversation (head in the store, and what is not stored yet). */
    fork: z.strictObject({ head: z.string().nullable(), pending: z.array(messageSchema) }).optional(),
    /** The caps, and the option types, for the child's own `agent` calls. */
    caps: z.strictObject({ maxDepth: z.number().int(), maxPerTurn: z.number().int(), maxAlive: z.number().int(), maxStepsPerChild: z.number().int() }),
    types: z.record(z.string(), agentTypeSchema).optional(),
    /**
     * The parent's remembered approvals when the child started: the same human's "always".
     * Objects here, checked by the child against the policy's schema (machines/policy/ must not
     * be imported by this preloaded module: worker/workflow-bundle.ts).
     */
    approvals: z.array(z.record(z.string(), z.unknown())).max(1_000).optional(),
    /**
     * The report token of the session's child this one descends from (absent: this child is
     * one): a descendant asks the session for a place under the tree's `maxAlive` with it.
     */
    treeToken: z.string().min(1).optional(),
  }),
);
export type Delegation = z.output<typeof delegationSchema>;

/** A child's report to its parent (a session, or an agent that delegates): the name a goal's agents report by, the same payload (./agent.ts agentReportSchema). */
export const subAgentReportSignal = defineSignal<[unknown]>('agentReport');

/**
 * `maxAlive` counts the whole tree (a session's children and theirs): a descendant that would
 * start a child asks the session for a place first (`take`), and gives it back when that child
 * ends (`give_back`). The session answers a `take` with signal `agentSlotAnswer`. `token` is
 * the report token of the session's child the asker descends from (the session checks it).
 */
export const subAgentSlotSignal = defineSignal<[unknown]>('agentSlot');
export const subAgentSlotSchema = lazySchema(() =>
  z.strictObject({
    op: z.enum(['take', 'give_back']),
    /** The asking agent's workflow id; the new child would be `<requester>/agent-<callId>`. */
    requester: z.string().min(1).max(4_000),
    callId: z.string().min(1).max(256),
    token: z.string().min(1).max(256),
  }),
);
export type SubAgentSlot = z.output<typeof subAgentSlotSchema>;

export const subAgentSlotAnswerSignal = defineSignal<[unknown]>('agentSlotAnswer');
export const subAgentSlotAnswerSchema = lazySchema(() =>
  z.strictObject({
    callId: z.string().min(1).max(256),
    granted: z.boolean(),
    /** Sub-agents of the session alive (all depths) when it answered. */
    alive: z.number().int().nonnegative(),
  }),
);
