// KeelClient: start and find goals and sessions on a Temporal server. Connection settings
// are read the way every Temporal tool reads them (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS_*, a profile in the Temporal config file); KEEL_TASK_QUEUE
// names the workers' queue. Starts are idempotent: the same id twice gives the same workflow.
import { randomUUID } from 'node:crypto';
// Not re-exported by the package: the SDK's own raw → info conversion, used by listExecutions.
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers.js';
import { Client, Connection, type ConnectionOptions, WorkflowExecutionAlreadyStartedError, type WorkflowExecutionInfo } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { EncryptionCodec, keelDataConverter } from '../shared/encryption';
import { goalWorkflow, type GoalOptions } from '../workflows/goal';
import { code, escapeMarkdown } from '../workflows/markdown';
import { sessionWorkflow, type SessionOptions } from '../workflows/session';
import { DEFAULT_MODEL, DEFAULT_TASK_QUEUE } from '../workflows/defaults';
import { stampedMemo, startSearchAttributes } from '../workflows/run-format';
import { describeIssues } from '../workflows/payloads';
import { goalOptionsSchema } from '../workflows/protocol/goal';
import { sessionOptionsSchema } from '../workflows/protocol/session';
import { CallerTraceInterceptor } from './caller-trace';
import { ClosableConnection } from './grpc-retry';
import { type ModelRequest, modelRequestIssues } from '../machines/models';
import { ConnectionError, IdempotencyKeyReusedError, InvalidInputError, mapErrors } from './errors';
import { hostMoveRequest, moveHostRuns, type MoveHostOptions, type MoveHostReport, type RunOnRecord } from './host-move';
import { GoalHandle } from './goal-handle';
import { KeelSchedules } from './schedules';
import { SessionHandle } from './session-handle';
import { forkSession, type ForkResult } from './session-fork';
import { forkGoal, type GoalForkResult } from './goal-fork';
import type { GoalForkRequest } from '../workflows/protocol/goal-fork';
import type { ForkRequest } from '../workflows/protocol/checkpoints';
import { resolveWorkspace, WorkspaceError } from './workspace';

export { DEFAULT_TASK_QUEUE };

export interface KeelClientOptions {
  /** host:port; default TEMPORAL_ADDRESS, a config profile, or localhost:7233. */
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** TLS, API key, metadata… passed to Connection.connect as they are. */
  connectionOptions?: ConnectionOptions;
  /** Where TEMPORAL_*, KEEL_TASK_QUEUE and KEEL_WORKSPACE_HOST are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** An existing client (its connection is not closed by close()). */
  client?: Client;
}

export type StartGoalOptions = Omit<GoalOptions, 'goal' | 'workspace'> & {
  /** Directory the agents work in (resolved to its real path, must exist; default the current directory). */
  workspace?: string;
  /** Create the workspace directory when it does not exist. */
  createWorkspace?: boolean;
  /** Workflow id; pass the same id again (e.g. from a retried request) to get the same goal. */
  id?: string;
  /**
   * What the request asked for (a hash of it): with an id already in use, a different digest
   * is another request under the same id, refused with IdempotencyKeyReusedError.
   */
  requestDigest?: string;
};

export type StartSessionOptions = Omit<SessionOptions, 'workspace'> & {
  /** Resolved to its real path; must exist unless createWorkspace. */
  workspace?: string;
  createWorkspace?: boolean;
  id?: string;
  /** As StartGoalOptions.requestDigest. */
  requestDigest?: string;
};

export interface ListOptions {
  /** Only workflows with a tool call waiting for a human, or a goal's plan waiting for approval. */
  waitingForApproval?: boolean;
  kind?: 'goal' | 'session' | 'agent';
  /** A Keel status (`processing`, `awaiting_plan_approval`, `goal_met`, …). */
  status?: string;
  /** Include closed workflows (default: running only). */
  all?: boolean;
  limit?: number;
}

export interface ListEntry {
  id: string;
  kind: string | null;
  status: string | null;
  pendingApprovals: number;
  workspace: string | null;
  /** Temporal's execution status: RUNNING, COMPLETED, … */
  execution: string;
  type: string;
  startTime: string;
  /** A goal's text on one line (from the memo; null for sessions and goals started before it). */
  summary: string | null;
  /** When it ended (null while it runs). */
  closeTime: string | null;
  /** What it waits out now (KeelWaiting: `conversation-store`, `host:<name>`…); null when nothing, or on a server without the attribute. */
  infraWaiting: string | null;
}

const KIND = defineSearchAttributeKey('KeelKind', SearchAttributeType.KEYWORD);
const STATUS = defineSearchAttributeKey('KeelStatus', SearchAttributeType.KEYWORD);
const PENDING = defineSearchAttributeKey('KeelPendingApprovals', SearchAttributeType.INT);
const WORKSPACE = defineSearchAttributeKey('KeelWorkspace', SearchAttributeType.KEYWORD);
const WAITING = defineSearchAttributeKey('KeelWaiting', SearchAttributeType.KEYWORD);

const quote = (v: string) => `'${v.replace(/'/g, "\\'")}'`;

export class KeelClient {
  private constructor(
    readonly client: Client,
    readonly taskQueue: string,
    readonly address: string,
    private readonly connection: Connection | null,
    /** KEEL_WORKSPACE_HOST of this process: workspaces it resolves are on this host's disk (workflows/workspace-host.ts). */
    private readonly workspaceHost: string | null = null,
  ) {}

  static async connect(options: KeelClientOptions = {}): Promise<KeelClient> {
    const env = options.env ?? process.env;
    const taskQueue = options.taskQueue ?? (env.KEEL_TASK_QUEUE || DEFAULT_TASK_QUEUE);
    const workspaceHost = env.KEEL_WORKSPACE_HOST?.trim() || null;
    if (options.client) return new KeelClient(options.client, taskQueue, '(given client)', null, workspaceHost);
    const loaded = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
    const address = options.address ?? loaded.connectionOptions.address ?? 'localhost:7233';
    const namespace = options.namespace ?? loaded.namespace ?? 'default';
    let connection: Connection;
    const connectionOptions = { ...loaded.connectionOptions, ...options.connectionOptions, address, connectTimeout: '5s' };
    try {
      // The SDK's default retry, except that close() does not leave a retry to fire on a closed
      // channel (client/grpc-retry.ts); a caller's own interceptors are taken as they are.
      connection = connectionOptions.interceptors ? await Connection.connect(connectionOptions) : await ClosableConnection.connect(connectionOptions);
    } catch (error) {
      throw new ConnectionError(address, { cause: error });
    }
    const dataConverter = await keelDataConverter(env);
    // Carries the caller's trace context (when the application has OpenTelemetry set up and the
    // call is inside one of its spans) into the workflow, so a trace runs client → workflow →
    // activities; a call outside any span starts no trace (client/caller-trace.ts).
    const interceptors = { workflow: [new CallerTraceInterceptor()] };
    return new KeelClient(new Client({ connection, namespace, interceptors, ...(dataConverter ? { dataConverter } : {}) }), taskQueue, address, connection, workspaceHost);
  }

  /** Starts a goal (or, with an id already in use, returns that goal). */
  async startGoal(goal: string, options: StartGoalOptions = {}): Promise<GoalHandle> {
    const { id, requestDigest, ...rest } = options;
    const workflowId = id ?? `goal-${randomUUID()}`;
    const args = await this.goalArgs('startGoal', goal, rest);
    await this.start(workflowId, 'startGoal', requestDigest, () =>
      this.client.workflow.start(goalWorkflow, {
        taskQueue: this.taskQueue,
        workflowId,
        args: [args],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        staticSummary: `goal: ${escapeMarkdown(oneLine(goal, 180))}`,
        // The memo comes back with every list entry: lists show what each goal is for.
        memo: stampedMemo({ keelSummary: oneLine(goal, 180), ...digestMemo(requestDigest) }),
        typedSearchAttributes: startSearchAttributes('goal', args.workspace),
        staticDetails: `Keel goal in ${code(args.workspace)}\n\n${escapeMarkdown(goal)}`,
      }),
    );
    return new GoalHandle(this.client, workflowId);
  }

  /** A goal's start input: the workspace resolved, the options checked as the workflow will (a refusal names the field). */
  private async goalArgs(operation: string, goal: string, options: Omit<StartGoalOptions, 'id'>): Promise<GoalOptions> {
    const { workspace, createWorkspace, ...rest } = options;
    const args: GoalOptions = { ...this.onHost(rest), goal, workspace: await workspaceFor(operation, workspace, createWorkspace), ...this.keyed() };
    validate(goalOptionsSchema, args, operation);
    checkModel(args.model, { maxTokens: args.maxTokens, thinking: args.thinking }, operation);
    return args;
  }

  /** Goals on a schedule (client/schedules.ts, docs/schedules.md): create, list, and each one's runs and spend. */
  get schedules(): KeelSchedules {
    return new KeelSchedules(this.client, this.taskQueue, (operation, goal, options) => this.goalArgs(operation, goal, options));
  }

  /**
   * The workspace was found on this process's disk: with KEEL_WORKSPACE_HOST set, that disk
   * is this host's alone, so the run's tools must run here (unless the caller names a host).
   */
  private onHost<T extends { workspaceHost?: string }>(options: T): T {
    return options.workspaceHost === undefined && this.workspaceHost !== null ? { ...options, workspaceHost: this.workspaceHost } : options;
  }

  getGoal(id: string): GoalHandle {
    return new GoalHandle(this.client, id);
  }

  /** Starts a session (or, with an id already in use, returns that session). */
  async startSession(options: StartSessionOptions = {}): Promise<SessionHandle> {
    const { id, workspace, createWorkspace, requestDigest, ...rest } = options;
    const workflowId = id ?? `session-${randomUUID()}`;
    const args: SessionOptions = { ...this.onHost(rest), workspace: await workspaceFor('startSession', workspace, createWorkspace), ...this.keyed() };
    validate(sessionOptionsSchema, args, 'startSession');
    checkModel(args.model, { maxTokens: args.maxTokens, thinking: args.thinking }, 'startSession');
    await this.start(workflowId, 'startSession', requestDigest, () =>
      this.client.workflow.start(sessionWorkflow, {
        taskQueue: this.taskQueue,
        workflowId,
        args: [args],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        staticSummary: `session in ${code(args.workspace)}`,
        // Stamped, and showing what it is from its first moment: the workflow writes neither (workflows/run-format.ts).
        memo: stampedMemo(digestMemo(requestDigest)),
        typedSearchAttributes: [...startSearchAttributes('session', args.workspace), { key: STATUS, value: 'active' }, { key: PENDING, value: 0 }],
      }),
    );
    return new SessionHandle(this.client, workflowId);
  }

  getSession(id: string): SessionHandle {
    return new SessionHandle(this.client, id);
  }

  /**
   * A new session from `parentId`'s turn `atTurn` (or a checkpoint by id, one a rewind set
   * aside too): its conversation up to there, its files in a new workspace (client/session-fork.ts).
   */
  forkSession(parentId: string, request: ForkRequest): Promise<ForkResult> {
    return forkSession(this.client, this.taskQueue, parentId, request);
  }

  /**
   * A new goal from a plan version (`atPlanVersion`) or a finished task (`afterTask`) of a goal
   * started with checkpoints, with its plan there or `plan` (checked as a planner's): the tasks
   * done by then kept, the others run again, the files in a new workspace (client/goal-fork.ts).
   */
  forkGoal(parentId: string, request: GoalForkRequest): Promise<GoalForkResult> {
    return forkGoal(this.client, this.taskQueue, parentId, request);
  }

  /** Which kind a workflow id is (`goal`, `session`, `agent`), from its type. */
  async kindOf(id: string): Promise<'goal' | 'session' | 'agent' | null> {
    const d = await mapErrors(id, 'describe', () => this.client.workflow.getHandle(id).describe());
    if (d.type === 'goalWorkflow') return 'goal';
    if (d.type === 'sessionWorkflow') return 'session';
    if (d.type === 'agentWorkflow') return 'agent';
    return null;
  }

  /**
   * Executions matching a visibility query, as the SDK's `workflow.list` gives them, except
   * that a memo this client cannot decode (encrypted with keys it does not hold, or by
   * another converter) leaves only that entry without its memo instead of failing the whole
   * listing (`keel ls` and `GET /api/workflows` answered 500 beside one encrypted goal).
   */
  private async *listExecutions(query: string): AsyncGenerator<WorkflowExecutionInfo> {
    const converter = this.client.options.loadedDataConverter;
    let nextPageToken: Uint8Array = Buffer.alloc(0);
    for (;;) {
      const response = await this.client.workflowService.listWorkflowExecutions({ namespace: this.client.options.namespace, query, nextPageToken });
      for (const raw of response.executions) {
        yield await executionInfoFromRaw(raw, converter, raw, this.client.options.namespace).catch(() => {
          // A copy without the memo that keeps the message's prototype (its field defaults live there).
          const withoutMemo = Object.assign(Object.create(Object.getPrototypeOf(raw) as object) as typeof raw, raw, { memo: null });
          return executionInfoFromRaw(withoutMemo, converter, raw, this.client.options.namespace);
        });
      }
      nextPageToken = response.nextPageToken;
      if (!nextPageToken || nextPageToken.length === 0) return;
    }
  }

  /** Goals and sessions by their search attributes (a visibility query). */
  async list(options: ListOptions = {}): Promise<ListEntry[]> {
    const clauses = ['KeelKind IS NOT NULL'];
    if (options.kind) clauses.push(`KeelKind = ${quote(options.kind)}`);
    if (options.status) clauses.push(`KeelStatus = ${quote(options.status)}`);
    if (options.waitingForApproval) clauses.push("(KeelPendingApprovals > 0 OR KeelStatus = 'awaiting_plan_approval')");
    if (!options.all) clauses.push("ExecutionStatus = 'Running'");
    const out: ListEntry[] = [];
    const limit = options.limit ?? 100;
    for await (const info of this.listExecutions(clauses.join(' AND '))) {
      const sa = info.typedSearchAttributes;
      out.push({
        id: info.workflowId,
        kind: sa.get(KIND) ?? null,
        status: sa.get(STATUS) ?? null,
        pendingApprovals: sa.get(PENDING) ?? 0,
        workspace: sa.get(WORKSPACE) ?? null,
        execution: info.status.name,
        type: info.type,
        startTime: info.startTime.toISOString(),
        summary: typeof info.memo?.keelSummary === 'string' ? info.memo.keelSummary : null,
        closeTime: info.closeTime ? info.closeTime.toISOString() : null,
        infraWaiting: sa.get(WAITING) ?? null,
      });
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * Moves every running session, goal and agent whose workspace is on host `from` to host `to`
   * (a host that never comes back; docs/deployment.md "Moving a host's workspaces"): with the
   * files (`files: 'copy'`, from `source` on the new host or the workspace's own path there), or
   * declared lost (`files: 'lost'`: each run goes on in an empty workspace and its log says so).
   * A worker with KEEL_WORKSPACE_HOST=<to> must be running: it lays each workspace out.
   */
  async moveHost(from: string, to: string, options: MoveHostOptions = {}): Promise<MoveHostReport> {
    const request = hostMoveRequest(from, to, options);
    const runs = async function* (executions: AsyncGenerator<WorkflowExecutionInfo>): AsyncGenerator<RunOnRecord> {
      for await (const info of executions) yield { id: info.workflowId, kind: info.typedSearchAttributes.get(KIND) ?? null, workspace: info.typedSearchAttributes.get(WORKSPACE) ?? null };
    };
    // This fleet's runs (its task queue): a run of another fleet may have no worker to answer.
    return moveHostRuns(this.client, runs(this.listExecutions(`KeelKind IS NOT NULL AND ExecutionStatus = 'Running' AND TaskQueue = ${quote(this.taskQueue)}`)), request);
  }

  /** Holding the encryption keys, this client's controls are encrypted, so the workflow may
   *  refuse the bare, unauthenticated form of the controls that name nothing. */
  private keyed(): { authenticatedControls?: true } {
    const codecs = this.client.options.loadedDataConverter.payloadCodecs;
    return codecs.some((c) => c instanceof EncryptionCodec) ? { authenticatedControls: true } : {};
  }

  /** Closes the connection this client made (a ClosableConnection waits for a scheduled gRPC retry first). */
  async close(): Promise<void> {
    await this.connection?.close();
  }

  private async start(workflowId: string, operation: string, requestDigest: string | undefined, body: () => Promise<unknown>): Promise<void> {
    try {
      await mapErrors(workflowId, operation, body);
    } catch (error) {
      // Already run to its end under this id: the same goal, not a new one.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    if (requestDigest === undefined) return;
    // The id may be another request's: the workflow keeps the digest it was started with. A run
    // started before digests existed has none, and is taken as the same request.
    const { memo } = await mapErrors(workflowId, 'describe', () => this.client.workflow.getHandle(workflowId).describe());
    const startedWith = memo?.[REQUEST_DIGEST_MEMO];
    if (typeof startedWith === 'string' && startedWith !== requestDigest) throw new IdempotencyKeyReusedError(workflowId);
  }
}

/** The memo field that holds what a start was asked for (StartGoalOptions.requestDigest). */
export const REQUEST_DIGEST_MEMO = 'keelRequestDigest';
const digestMemo = (digest: string | undefined): Record<string, string> => (digest === undefined ? {} : { [REQUEST_DIGEST_MEMO]: digest });

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The workflow would refuse this input at once: refuse it here, before anything starts. */
/** The workspace's real path (must exist unless `create`); a refusal names the field. */
async function workspaceFor(operation: string, workspace: string | undefined, create: boolean | undefined): Promise<string> {
  try {
    return await resolveWorkspace(workspace, { create: create ?? false });
  } catch (error) {
    if (error instanceof WorkspaceError) throw new InvalidInputError(operation, [`${error.field}: ${error.message}`]);
    throw error;
  }
}

/** The model table's refusals, before anything starts (a model it does not know is the worker's to judge). */
function checkModel(model: string | undefined, request: ModelRequest, operation: string): void {
  const issues = modelRequestIssues(model ?? DEFAULT_MODEL, request);
  if (issues.length) throw new InvalidInputError(operation, issues);
}

function validate(schema: typeof goalOptionsSchema | typeof sessionOptionsSchema, args: unknown, operation: string): void {
  const r = schema.safeParse(args);
  if (!r.success) throw new InvalidInputError(operation, describeIssues(r.error.issues));
}
