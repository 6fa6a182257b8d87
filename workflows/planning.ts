// The goal's two model calls that must answer in a fixed shape: the planner through a
// `submit_plan` tool and the critic through `submit_review` (tool_choice forces the call).
// One zod schema per tool gives both the JSON schema the model sees and the parse of its
// answer. The prompts are built from the autonomy machine's state; nothing here decides
// anything — the machine validates the plan and judges the review.
import { z } from 'zod';
import { commandEnding } from '../machines/evidence';
import type { GoalState, Task, TaskInput } from '../machines/index';
import type { LimitKind } from '../machines/tool-result';
import { FINISH_TASK, FINISH_TASK_DESCRIPTION, finishTaskSchema } from '../machines/task-outcome';
import { lazySchema, once } from '../machines/lazy-schema';

const taskShape = once(() => ({
  id: z.string().min(1).max(64).describe('Short unique id, e.g. "write-tests". Dependencies refer to it.'),
  title: z.string().min(1).describe('One line: what the task achieves.'),
  instructions: z.string().min(1).describe('Everything the agent doing this task needs to know; it sees nothing else.'),
  dependencies: z.array(z.string()).optional().describe('Ids of tasks that must be finished before this one starts.'),
  priority: z.number().int().optional().describe('Among tasks ready at once, higher starts first (default 0).'),
  role: z.string().optional().describe('The kind of agent, e.g. "coder", "tester" (default "worker").'),
  acceptance: z.string().optional().describe('How to check the task is done, e.g. "npm test exits 0".'),
}));
export const plannedTaskSchema = lazySchema(() => z.object(taskShape()));
export type PlannedTask = z.infer<typeof plannedTaskSchema>;

export const submitPlanSchema = lazySchema(() => z.object({
  tasks: z.array(plannedTaskSchema).min(1).describe('The tasks, as a dependency graph (no cycles).'),
}));
export const submitReviewSchema = lazySchema(() => z.object({
  verdict: z.enum(['pass', 'follow_up', 'replan']).describe('pass: the goal is met; follow_up: add the tasks below; replan: the approach is wrong, plan again.'),
  findings: z.string().min(1).describe('What you checked and what you found; for pass, a summary of what was done.'),
  tasks: z.array(plannedTaskSchema).optional().describe('For follow_up: new tasks (new ids; they may depend on finished tasks).'),
}));

/** The JSON schema is made when first read (serialised into a model call), not when the module loads. */
function toolSpec(name: string, description: string, schema: z.ZodType): { name: string; description: string; readonly input_schema: Record<string, unknown> } {
  const inputSchema = once(() => {
    const json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    delete json.$schema;
    return json;
  });
  return {
    name,
    description,
    get input_schema() {
      return inputSchema();
    },
  };
}

export const SUBMIT_PLAN = 'submit_plan';
export const SUBMIT_REVIEW = 'submit_review';
export const submitPlanTool = toolSpec(SUBMIT_PLAN, 'Submit the plan for the goal: a list of tasks with their dependencies.', submitPlanSchema);
export const submitReviewTool = toolSpec(SUBMIT_REVIEW, 'Submit your review of the work done for the goal.', submitReviewSchema);
/** How a task agent ends its work (machines/task-outcome.ts decides the outcome from it). */
export const finishTaskTool = toolSpec(FINISH_TASK, FINISH_TASK_DESCRIPTION, finishTaskSchema);

export const PLANNER_SYSTEM =
  'You are the planner of Keel, a runtime for autonomous agents. Break the goal into a small ' +
  'graph of concrete tasks. Each task is done by its own agent with file and command tools in ' +
  'the shared workspace; it sees only its own instructions. Answer with the submit_plan tool.';
export const CRITIC_SYSTEM =
  'You are the critic of Keel. Judge whether the work done meets the goal, from the tasks\' ' +
  'results and evidence (files changed, commands and their exit codes). Answer with the ' +
  'submit_review tool: pass, follow_up with new tasks, or replan with the reason.';

/** The model's tasks as the machine takes them; the acceptance check travels in the instructions. */
export function toTaskInputs(tasks: readonly PlannedTask[]): TaskInput[] {
  return tasks.map((t) => ({
    id: t.id,
    title: t.title,
    instructions: t.acceptance ? `${t.instructions}\n\nAcceptance check: ${t.acceptance}` : t.instructions,
    ...(t.dependencies !== undefined ? { dependencies: t.dependencies } : {}),
    ...(t.priority !== undefined ? { priority: t.priority } : {}),
    ...(t.role !== undefined ? { role: t.role } : {}),
  }));
}

/** A tool answer that does not even have the tool's shape: the problems, for the model. */
export function shapeProblems(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`);
}

function describeTasks(tasks: readonly Task[]): string {
  return tasks
    .map((t) => {
      const lines = [`- [${t.id}] ${t.title} — ${t.status}${t.dependencies.length > 0 ? ` (after ${t.dependencies.join(', ')})` : ''}`];
      if (t.result !== null) lines.push(`  result: ${t.result}`);
      for (const e of t.evidence) lines.push(`  evidence: ${e}`);
      return lines.join('\n');
    })
    .join('\n');
}

export interface PlanRequest {
  attempt: number;
  feedback: string | null;
  errors: readonly string[];
  /** The proposal the errors are about. */
  previous: unknown;
}

export function planPrompt(state: GoalState, request: PlanRequest): string {
  const parts = [`Goal:\n${state.goal}`];
  const done = state.tasks.filter((t) => t.status === 'succeeded' || t.status === 'skipped' || t.status === 'failed');
  if (done.length > 0) parts.push(`Work done so far (keep what is good; new tasks need new ids or they count as retries):\n${describeTasks(done)}`);
  if (request.feedback !== null) parts.push(`Feedback on the previous plan:\n${request.feedback}`);
  if (request.errors.length > 0) {
    parts.push(`Your previous proposal was invalid:\n${JSON.stringify(request.previous)}\nErrors:\n${request.errors.map((e) => `- ${e}`).join('\n')}\nSubmit a corrected plan.`);
  }
  parts.push(`Plan attempt ${request.attempt}. Submit the plan with submit_plan.`);
  return parts.join('\n\n');
}

export function reviewPrompt(state: GoalState, cycle: number, errors: readonly string[]): string {
  const parts = [`Goal:\n${state.goal}`, `Tasks (plan version ${state.planVersion}):\n${describeTasks(state.tasks)}`];
  if (state.reviews.length > 0) parts.push(`Earlier reviews:\n${state.reviews.map((r) => `- cycle ${r.cycle}: ${r.verdict} — ${r.findings}`).join('\n')}`);
  if (errors.length > 0) parts.push(`Your previous review could not be used:\n${errors.map((e) => `- ${e}`).join('\n')}`);
  parts.push(`Review cycle ${cycle}. Submit your review with submit_review.`);
  return parts.join('\n\n');
}

/** The task prompt a child agent starts with. */
export function taskPrompt(goal: string, task: { taskId: string; title: string; instructions: string }, earlierAttempts?: string): string {
  const earlier = earlierAttempts
    ? `\n\nThis task was attempted before; the workspace already holds what those attempts did. Check before repeating anything with a side effect (appending to a file, sending, deleting):\n${earlierAttempts}`
    : '';
  return `Overall goal (for context): ${goal}\n\nYour task [${task.taskId}]: ${task.title}\n\n${task.instructions}${earlier}\n\nWhen you are done, call ${FINISH_TASK} with status "succeeded" and a short summary of what you did and how you checked it. If you cannot do the task, call ${FINISH_TASK} with status "failed" and say why.`;
}

/** One earlier attempt at a task, as the next attempt's agent reads it. */
export interface AttemptRecord {
  attempt: number;
  /** How it ended: its result or failure, or "interrupted" when it never finished. */
  ended: string;
  filesChanged: readonly string[];
  commands: readonly { command: string; exitCode: number | null; status: string; refused?: string; limit?: LimitKind }[];
}

/** The earlier attempts, newest last, bounded so a long history of retries stays readable. */
export function describeAttempts(records: readonly AttemptRecord[]): string {
  return records
    .slice(-5)
    .map((r) => {
      const lines = [`- attempt ${r.attempt}: ${oneLine(r.ended, 500)}`];
      for (const f of r.filesChanged.slice(0, 30)) lines.push(`  changed file: ${f}`);
      for (const c of r.commands.slice(-30)) lines.push(`  ran: ${oneLine(c.command, 300)} → ${commandEnding(c)}`);
      if (r.filesChanged.length === 0 && r.commands.length === 0) lines.push('  (no file changes or commands recorded)');
      return lines.join('\n');
    })
    .join('\n');
}

function oneLine(text: string, max: number): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

export const agentSystem = (taskId: string, role: string): string =>
  `You are a Keel task agent (role: ${role}) working on task [${taskId}] of a larger goal, in a shared workspace. Use the tools; be brief. ` +
  `Your work ends only when you call the ${FINISH_TASK} tool (status succeeded or failed, with a summary): a plain text answer does not finish the task.`;
