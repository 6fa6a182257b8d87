// The Temporal activities for built-in tools. `runTool` runs any of them by name;
// the workflow picks the ActivityOptions from the tool's definition (listTools gives
// them as data, since workflow code cannot import this folder).
import { CancelledFailure, Context, type Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { WORKER_SHUTDOWN_FAILURE } from '../../machines/tool-result';
import { DEFAULT_OUTPUT_CAP_BYTES } from './artifacts';
import { DEFAULT_ENV_ALLOW_LIST, type ToolContext } from './context';
import { modelToolSpec, toolRegistry, type ModelToolSpec, type RunnableTool, type ToolActivityOptions } from './definitions';
import { type ToolResult } from './result';
import { storeLargeOutput, type StoreOutputTarget } from '../stored-outputs';
import { executeTool } from './run-tool';
import { TOOL_STREAM_TOPIC, ToolProgressEvents, type ToolProgressEvent } from './progress';
import { openExisting, openWorkspace } from './workspace';
import { hashScripts } from './script-hash';
import { LOCAL_BUDGET } from '../../machines/local-budget';
import { LocalBudgetExceeded, localBudgetFailure, localBudgetFrom } from './local-budget';
import { type LoadedPolicy, loadPolicy } from './policy-file';
import { type CommandSandbox, type PolicyConfigInput } from '../../machines/policy';
import type { ScriptHashes } from '../../machines/script-binding';
import type { DefinedToolKind } from '../../machines/tool-spec';

export interface RunToolRequest {
  /** Absolute path of the session's workspace directory. */
  workspace: string;
  tool: string;
  /** The model's input, unvalidated. */
  input: unknown;
  /** For run_command: the sandbox the policy chose. Absent: workspace-write, no network. */
  sandbox?: CommandSandbox;
  /** The model's tool call id, named in `tool.progress` events (default: the activity id). */
  callId?: string;
  /** For run_command: the files its approval is bound to; a changed one is not run (machines/script-binding.ts). */
  scripts?: ScriptHashes;
  /** Send `tool.progress` events to the calling workflow's stream (default true; it needs a WorkflowStream). */
  publish?: boolean;
  /** A result longer than a few KB is stored here once, and the workflow gets a preview and its reference (activities/stored-outputs.ts). */
  storeOutput?: StoreOutputTarget;
}

export interface ToolDescription {
  spec: ModelToolSpec;
  readOnly: boolean;
  kind: DefinedToolKind;
  /** Absent for ask_user: the workflow handles it. */
  activityOptions: ToolActivityOptions | undefined;
  /** Runs as a local activity where it can (ToolSpec.local); absent when not. */
  local?: true;
  /** A tool the worker defined (defineTool), not a built-in one: the workflow is told its kind. */
  defined?: true;
}

export interface ToolActivitiesConfig {
  envAllowList?: readonly string[];
  outputCapBytes?: number;
  /** Extra host paths sandboxed commands may read (KEEL_SANDBOX_READ). */
  sandboxRead?: readonly string[];
  /** The worker's own tools, after the built-in ones (defineTool; docs/adding-a-tool.md). */
  tools?: readonly RunnableTool[];
}

const HEARTBEAT_EVERY_MS = 500;

/**
 * A worker that shuts down cancels what still runs after its grace time. That is not a
 * cancel the session asked for: the tool was stopped (a command's whole process group
 * killed); the turn runs a read-only call again on another worker and ends any other as
 * worker_lost (workflows/turn-runner.ts).
 */
function stoppedBy(reason: unknown): unknown {
  if (reason instanceof CancelledFailure && reason.message === 'WORKER_SHUTDOWN') {
    return ApplicationFailure.create({ type: WORKER_SHUTDOWN_FAILURE, message: 'the worker shut down while the tool ran, and it was stopped (a read-only tool runs again on another worker; any other ends as worker_lost)' });
  }
  return reason;
}

export function createToolActivities(config: ToolActivitiesConfig = {}) {
  // Checked once, when the worker starts: a name used twice stops it here.
  const registry = toolRegistry(config.tools);
  const defined = new Set(config.tools?.map((tool) => tool.name));
  return {
    async runTool(request: RunToolRequest): Promise<ToolResult> {
      const began = performance.now();
      const context = Context.current();
      const info = context.info;
      const ws = await openWorkspace(request.workspace);
      // The last progress is repeated by the periodic heartbeat, so it is never replaced by nothing.
      let lastProgress: unknown;
      const published = request.publish !== false && info.workflowExecution ? progressEvents(info, request) : undefined;
      // A local call holds its workflow task: bounded in bytes (the tool checks) and in time
      // (here, for any tool), past which it stops and the workflow runs it as an activity.
      const budget = info.isLocal ? localBudgetFrom(LOCAL_BUDGET) : undefined;
      const outOfTime = new AbortController();
      const ctx: ToolContext = {
        ws,
        callKey: toolCallKey(info),
        progress: (details) => {
          lastProgress = details;
          // A local activity has no heartbeat: it runs inside its workflow task, and its
          // progress reaches clients as events only.
          if (!info.isLocal) context.heartbeat(details);
          published?.events.offer(details);
        },
        signal: budget === undefined ? context.cancellationSignal : AbortSignal.any([context.cancellationSignal, outOfTime.signal]),
        ...(budget !== undefined ? { localBudget: budget } : {}),
        envAllowList: config.envAllowList ?? DEFAULT_ENV_ALLOW_LIST,
        outputCapBytes: config.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES,
        ...(request.sandbox ? { sandbox: request.sandbox } : {}),
        ...(request.scripts ? { boundScripts: request.scripts } : {}),
        ...(config.sandboxRead ? { sandboxRead: config.sandboxRead } : {}),
      };
      // Every tool heartbeats, not only commands: it is how a long grep hears of a cancel.
      const beat = info.isLocal ? undefined : setInterval(() => context.heartbeat(lastProgress), HEARTBEAT_EVERY_MS);
      let timer: NodeJS.Timeout | undefined;
      try {
        const running = executeTool(ctx, request.tool, request.input, registry);
        const result =
          budget === undefined
            ? await running
            : await Promise.race([
                running,
                new Promise<never>((_, reject) => {
                  timer = setTimeout(() => {
                    // The tool is told to stop; what it still does is not waited for (nor its answer kept).
                    outOfTime.abort();
                    running.catch(() => undefined);
                    reject(new LocalBudgetExceeded('past its time'));
                  }, Math.max(0, budget.deadline - Date.now()));
                }),
              ]);
        // A cancelled activity must end as cancelled, whatever the tool made of it.
        if (context.cancellationSignal.aborted) throw stoppedBy(context.cancellationSignal.reason);
        const done = await storeLargeOutput(result, request.storeOutput, process.env, (message, error) => {
          context.log.warn(message, { error: String(error) });
        });
        // A local call says how long it ran: the workflow stamps its result from it (machines/tool-result.ts localResultTime).
        return info.isLocal ? { ...done, ran_ms: Math.round(performance.now() - began) } : done;
      } catch (error) {
        if (context.cancellationSignal.aborted) throw stoppedBy(context.cancellationSignal.reason);
        throw error instanceof LocalBudgetExceeded ? localBudgetFailure(error.message) : error;
      } finally {
        clearTimeout(timer);
        clearInterval(beat);
        await published?.close();
      }
    },

    /**
     * The workspace files a command waiting for approval runs, hashed when the human is
     * asked: the approval is bound to what they said then (machines/script-binding.ts).
     */
    async hashCommandScripts(request: { workspace: string; input: unknown }): Promise<ScriptHashes> {
      const ws = await openWorkspace(request.workspace);
      const cwdArg = typeof request.input === 'object' && request.input !== null && 'cwd' in request.input && typeof request.input.cwd === 'string' ? request.input.cwd : '.';
      const cwd = await openExisting(ws, cwdArg, 'directory').catch(() => null);
      if (cwd === null) return {};
      await cwd.handle.close();
      const command = typeof request.input === 'object' && request.input !== null && 'command' in request.input ? request.input.command : undefined;
      return (await hashScripts(ws, cwd.real.toString(), command)).hashes;
    },

    /** The workspace's .keel/policy.json with the session's options over it, validated. */
    async loadPolicy(request: { workspace: string; options?: PolicyConfigInput }): Promise<LoadedPolicy> {
      return loadPolicy(await openWorkspace(request.workspace), request.options);
    },

    /** The tools for the model (the built-in ones, then the worker's own), with their activity options as data. */
    async listTools(): Promise<ToolDescription[]> {
      return registry.map((tool) => ({
        spec: modelToolSpec(tool),
        readOnly: tool.readOnly,
        kind: tool.kind,
        activityOptions: tool.activity,
        ...(tool.local ? { local: true as const } : {}),
        ...(defined.has(tool.name) ? { defined: true as const } : {}),
      }));
    },
  };
}

export type ToolActivities = ReturnType<typeof createToolActivities>;

/**
 * `tool.progress` events for this call on the workflow's stream. The stream client is made
 * on the first event, so the many quick tools never open one; a stream that cannot be
 * reached costs a warning, never the tool's result. MCP calls use it too.
 *
 * The activity's context is taken once, here, inside the activity: events may be offered
 * from outside its async context (an MCP server's connections come from Keel's proxy,
 * whose sockets belong to no activity), where `Context.current()` does not exist.
 */
export function progressEvents(info: Info, request: { callId?: string | undefined; tool: string }): { events: ToolProgressEvents; close(): Promise<void> } {
  const context = Context.current();
  const workflowId = info.workflowExecution?.workflowId;
  let client: WorkflowStreamClient | undefined;
  const events = new ToolProgressEvents(
    (event) => {
      try {
        if (workflowId === undefined) return;
        client ??= WorkflowStreamClient.create(context.client, workflowId, { batchInterval: 200, maxRetryDuration: '5 seconds' });
        client.topic<ToolProgressEvent>(TOOL_STREAM_TOPIC).publish(event, { forceFlush: true });
      } catch (error) {
        context.log.warn('could not publish tool progress', { error: String(error) });
      }
    },
    { callId: request.callId ?? info.activityId, tool: request.tool },
  );
  return {
    events,
    async close() {
      if (!client) return;
      try {
        await client[Symbol.asyncDispose]();
      } catch (error) {
        context.log.warn('could not deliver tool progress to the workflow stream', { error: String(error) });
      }
    },
  };
}

/**
 * Unique per tool call and stable across its retries. The run id is part of it because
 * activity ids start again at 1 after continue-as-new.
 */
export function toolCallKey(info: Info): string {
  const execution = info.workflowExecution;
  return execution ? `${execution.workflowId}/${execution.runId}/${info.activityId}` : `${info.activityType}/${info.activityId}`;
}
