// Sub-agents: a session's (or a task agent's) model delegates work with the `agent` tool, and
// each call runs as a child agent workflow. The rules live here, pure and tested without
// Temporal (test/unit/machines/sub-agents.test.ts): the tool's input, what a named agent type
// may say (a `.keel/agents/<name>.md` file or the session's options), the caps (depth, children
// per turn, children alive), that a child's tools are a subset of its parent's, the share of
// the parent's budget a child starts with, and the tool result the parent's model reads.
// The workflow (workflows/sub-agents.ts) applies these decisions and starts the children.
import { z } from 'zod';
import { agentShare, type RunningShare } from './budget-share';
import { NO_LIMITS, type TurnLimits, type Usage } from './budget';
import { lazySchema } from './lazy-schema';

/** The tool's name, as Claude Code and the Agent SDK users expect a Task/agent tool to be called. */
export const AGENT_TOOL = 'agent';

/**
 * Agent type names: what a file name may be (`.keel/agents/<name>.md`) and the model spells. A
 * source, not a RegExp: this module is shared between workflows and deep-frozen, and a frozen
 * RegExp cannot be matched with (its lastIndex is read-only).
 */
export const AGENT_TYPE_NAME = '^[a-z0-9][a-z0-9_-]{0,63}$';
export const isAgentTypeName = (name: string): boolean => new RegExp(AGENT_TYPE_NAME).test(name);

/** What the model sends with a call of `agent`. */
export const agentToolInput = lazySchema(() =>
  z.strictObject({
    description: z.string().min(1).max(200).describe('A short label for the work (3-8 words), shown to the human.'),
    prompt: z.string().min(1).max(100_000).describe('The task for the sub-agent, complete enough to do without this conversation (unless fork is true).'),
    subagent_type: z.string().regex(new RegExp(AGENT_TYPE_NAME)).optional().describe('One of the named agent types listed above; absent: a general-purpose agent with your tools.'),
    fork: z.boolean().optional().describe('Start the sub-agent from this conversation so far (same instructions, tools and model) instead of a fresh one.'),
    tools: z.array(z.string().min(1).max(128)).max(100).optional().describe('Only these of your tools (default: the type\'s, else all of yours).'),
  }),
);
export type AgentToolInput = z.output<typeof agentToolInput>;

const positive = lazySchema(() => z.number().int().positive());
const limitFields = lazySchema(() =>
  z.strictObject({
    inputTokens: z.number().int().nonnegative().optional(),
    outputTokens: z.number().int().nonnegative().optional(),
    costUsd: z.number().nonnegative().optional(),
  }),
);

/**
 * A named agent type: the front matter of `.keel/agents/<name>.md` (its body is `system`) or an
 * entry of the session's `agents.types`. Everything but the description is optional: absent
 * tools are all of the parent's, absent model the parent's.
 */
export const agentTypeSchema = lazySchema(() =>
  z.strictObject({
    description: z.string().min(1).max(1_000),
    /** The system prompt (a file's body). */
    system: z.string().min(1).max(100_000),
    tools: z.array(z.string().min(1).max(128)).max(100).optional(),
    model: z.string().min(1).max(200).optional(),
    /** Extended thinking for this type's calls (the API's minimum budget is 1,024). */
    thinkingBudgetTokens: z.number().int().min(1024).optional(),
    maxSteps: positive.optional(),
    limits: limitFields.optional(),
  }),
);
export type AgentType = z.output<typeof agentTypeSchema>;

/** A file's front matter: the type less its system prompt, which is the body. */
export const agentFileFrontMatter = lazySchema(() => agentTypeSchema.omit({ system: true }));

/** The caps a session's children are held to (session option `agents`; the defaults below). */
export const subAgentCapsSchema = lazySchema(() =>
  z.strictObject({
    /** How deep children may nest: 1 = the session's children may not delegate (default 2). */
    maxDepth: z.number().int().min(1).max(5).optional(),
    /** `agent` calls one assistant message may make (default 4). */
    maxPerTurn: z.number().int().min(1).max(32).optional(),
    /** Children of the session alive at once, all turns and depths (default 8). */
    maxAlive: z.number().int().min(1).max(64).optional(),
    /** A child's steps when its type names none (default 20). */
    maxStepsPerChild: positive.optional(),
  }),
);
export type SubAgentCapsInput = z.input<typeof subAgentCapsSchema>;
export interface SubAgentCaps {
  maxDepth: number;
  maxPerTurn: number;
  maxAlive: number;
  maxStepsPerChild: number;
}
export const DEFAULT_SUB_AGENT_CAPS: SubAgentCaps = { maxDepth: 2, maxPerTurn: 4, maxAlive: 8, maxStepsPerChild: 20 };

export function resolveCaps(input: SubAgentCapsInput | undefined): SubAgentCaps {
  return { ...DEFAULT_SUB_AGENT_CAPS, ...Object.fromEntries(Object.entries(input ?? {}).filter(([, v]) => v !== undefined)) };
}

/** The tool's spec for the model: what it does, and the named types it may choose from. */
export function agentToolDescription(types: readonly { name: string; description: string }[], problems: readonly string[] = []): string {
  const listed = types.length === 0 ? 'No named agent types are defined: omit subagent_type.' : `Named agent types (subagent_type):\n${types.map((t) => `- ${t.name}: ${t.description}`).join('\n')}`;
  return (
    'Delegate a task to a sub-agent that works on its own, with its own conversation and a subset of your tools, and returns its final answer ' +
    'with an account of what it did (files written, commands run). Several agent calls in one message run in parallel. ' +
    'Give each a complete prompt: a fresh sub-agent has not seen this conversation (fork: true starts it from this conversation instead). ' +
    `Its tool calls are judged by the same approval policy as yours.\n\n${listed}` +
    (problems.length > 0 ? `\n\nAgent files that could not be read (calling them fails):\n${problems.map((p) => `- ${p}`).join('\n')}` : '')
  );
}

/** The JSON Schema the model is given for the tool's input. */
export function agentToolInputSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(agentToolInput) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}

/** Where a call stands against the caps, checked as the call arrives (before anything is loaded). */
export interface CapsCheck {
  /** The parent's depth: a session is 0, its children 1, theirs 2. */
  depth: number;
  caps: SubAgentCaps;
  /** Sub-agents alive now: the session's whole tree for a session, this parent's own children for a descendant (which then asks the session). */
  alive: number;
  /** `agent` calls of this assistant message already let through before this one. */
  startedThisStep: number;
}

/** The cap a call would break, as the tool error the model reads; null when it may go on. */
export function capsRefusal(c: CapsCheck): string | null {
  const { caps } = c;
  if (c.depth + 1 > caps.maxDepth) return `agent refused: the depth cap is ${caps.maxDepth} (maxDepth), and this agent is at depth ${c.depth}; do the work yourself`;
  if (c.startedThisStep >= caps.maxPerTurn) return `agent refused: at most ${caps.maxPerTurn} agent calls in one message (maxPerTurn); call again with the rest after these answer`;
  if (c.alive >= caps.maxAlive) return aliveRefusal(c.alive, caps);
  return null;
}

/** The `maxAlive` refusal: the count is the session's whole tree (its children and theirs). */
export function aliveRefusal(alive: number, caps: SubAgentCaps): string {
  return `agent refused: ${alive} sub-agents of this session are running (all depths), the cap is ${caps.maxAlive} (maxAlive); wait for them to answer`;
}

/** Tools a child never gets: nobody answers a sub-agent's questions but its parent's model. */
const NOT_FOR_CHILDREN = ['ask_user'];

/** What the parent knows when a call that passed the caps asks for a child. */
export interface ChildRequest {
  input: AgentToolInput;
  /** The type it names, resolved (null: none named); `error`: named but not usable (unknown, malformed file). */
  type: { ok: true; type: AgentType } | { ok: false; error: string } | null;
  depth: number;
  caps: SubAgentCaps;
  /** The parent's tools by name (the agent tool among them when it may delegate). */
  parentTools: readonly string[];
  parentModel: string;
  /** The parent turn's limits and what it has spent so far (its children's finished spend included). */
  turnLimits: TurnLimits;
  turnUsage: Usage;
  /** Children of this parent running now, with the shares they started with and their spend as reported. */
  running: readonly RunningShare[];
  /** Other `agent` calls of this message still waiting for their share (they split what is free with this one). */
  waitingThisStep: number;
}

export interface ChildPlan {
  /** The child's tools by name (for a fork: all of the parent's, for the prompt cache). */
  tools: string[];
  model: string;
  /** Its turn's limits: a share of what the parent has free, capped by the type's own. */
  limits: TurnLimits;
  /** The child may call `agent` in turn (its depth is below the cap). */
  mayDelegate: boolean;
  fork: boolean;
}

export type ChildDecision = { ok: true; plan: ChildPlan } | { ok: false; error: string };

const min = (a: number | null, b: number | undefined): number | null => (b === undefined ? a : a === null ? b : Math.min(a, b));

/** What the child starts with, or why it cannot start: a tool the parent lacks, a bad type, no budget left. */
export function planChild(r: ChildRequest): ChildDecision {
  const { caps, input } = r;
  if (r.type !== null && !r.type.ok) return { ok: false, error: `agent refused: ${r.type.error}` };
  const type = r.type?.type ?? null;
  if (input.fork === true && (type !== null || input.tools !== undefined)) {
    return { ok: false, error: "agent refused: a fork has its parent's instructions, tools and model; do not give it subagent_type or tools" };
  }
  const own = r.parentTools.filter((t) => t !== AGENT_TOOL && !NOT_FOR_CHILDREN.includes(t));
  const asked = input.tools ?? type?.tools ?? null;
  if (asked !== null) {
    const lacking = asked.filter((t) => !own.includes(t) && t !== AGENT_TOOL);
    if (lacking.length > 0) return { ok: false, error: `agent refused: a sub-agent gets a subset of your tools, and ${lacking.map((t) => JSON.stringify(t)).join(', ')} ${lacking.length === 1 ? 'is not one of them' : 'are not among them'} (yours: ${own.join(', ')})` };
  }
  const mayDelegate = r.depth + 2 <= caps.maxDepth && r.parentTools.includes(AGENT_TOOL);
  // A fork keeps every tool (the cache prefix). Anyone else gets what it asked for, `agent` with
  // it when the parent has it: a call past the depth cap is then refused naming the cap.
  const tools = input.fork === true ? [...r.parentTools] : [...(asked ?? own).filter((t) => t !== AGENT_TOOL), ...(r.parentTools.includes(AGENT_TOOL) && (asked === null || asked.includes(AGENT_TOOL)) ? [AGENT_TOOL] : [])];
  const share = agentShare({ ...NO_LIMITS, inputTokens: r.turnLimits.inputTokens, outputTokens: r.turnLimits.outputTokens, costUsd: r.turnLimits.costUsd }, r.turnUsage, r.running, 1 + r.waitingThisStep);
  const limits: TurnLimits = {
    inputTokens: min(share.inputTokens, type?.limits?.inputTokens),
    outputTokens: min(share.outputTokens, type?.limits?.outputTokens),
    costUsd: min(share.costUsd, type?.limits?.costUsd),
    maxSteps: type?.maxSteps ?? caps.maxStepsPerChild,
  };
  if ([limits.inputTokens, limits.outputTokens, limits.costUsd].some((l) => l !== null && l <= 0)) {
    return { ok: false, error: "agent refused: this turn's budget has nothing left to give a sub-agent (it is spent, or held by the running ones)" };
  }
  return { ok: true, plan: { tools, model: input.fork === true ? r.parentModel : (type?.model ?? r.parentModel), limits, mayDelegate, fork: input.fork === true } };
}

/** How a child ended, as its workflow reports it. */
export interface ChildOutcome {
  label: string;
  outcome: 'succeeded' | 'failed';
  /** Its final answer, or why it failed. */
  summary: string;
  /** The turn's outcome (budget_exhausted, max_steps, interrupted …). */
  turnOutcome: string;
  filesChanged: readonly string[];
  commands: readonly { command: string; exitCode: number | null; status: string }[];
  usage: Usage;
  steps: number;
}

const MAX_LISTED = 20;

/** The tool result the parent's model reads: the child's answer and a short account of what it did. */
export function childResult(o: ChildOutcome): { isError: boolean; content: string } {
  const files = o.filesChanged.length === 0 ? 'none' : o.filesChanged.slice(0, MAX_LISTED).join(', ') + (o.filesChanged.length > MAX_LISTED ? ` and ${o.filesChanged.length - MAX_LISTED} more` : '');
  const commands =
    o.commands.length === 0
      ? 'none'
      : o.commands
          .slice(0, MAX_LISTED)
          .map((c) => `\`${c.command}\` (${c.exitCode === null ? c.status : `exit ${c.exitCode}`})`)
          .join(', ') + (o.commands.length > MAX_LISTED ? ` and ${o.commands.length - MAX_LISTED} more` : '');
  const account = `[${o.label}: ${o.steps} step${o.steps === 1 ? '' : 's'}, ${o.usage.inputTokens} in / ${o.usage.outputTokens} out tokens, $${o.usage.costUsd.toFixed(4)}; files written: ${files}; commands run: ${commands}]`;
  if (o.outcome === 'succeeded') return { isError: false, content: `${o.summary}\n\n${account}` };
  const why = o.turnOutcome === 'budget_exhausted' ? 'it ran out of its budget' : o.turnOutcome === 'max_steps' ? 'it reached its step limit' : `it ended ${o.turnOutcome}`;
  return { isError: true, content: `agent ${o.label} failed (${why}): ${o.summary}\n\n${account}` };
}

/** A child's name as the human sees it: its type (or `agent`, `fork`) and its number in the session. */
export function childLabel(input: AgentToolInput, n: number): string {
  return `${input.fork === true ? 'fork' : (input.subagent_type ?? 'agent')}-${n}`;
}

/** What the human is shown for a child's waiting call: "research-1 wants to run `npm test`". */
export function approvalLabel(label: string, tool: string, input: unknown): string {
  const obj = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  const command = obj.command;
  if (tool === 'run_command' && (typeof command === 'string' || Array.isArray(command))) return `${label} wants to run \`${Array.isArray(command) ? command.map(String).join(' ') : command}\``;
  if (typeof obj.path === 'string') return `${label} wants to ${tool.replace(/_/g, ' ')} \`${obj.path}\``;
  return `${label} wants to call ${tool}`;
}
