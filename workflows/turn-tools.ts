// The tool calls of a turn as activities: where each runs (its sandbox, the workspace's
// host), the approval it runs under and the files that approval is bound to, a read-only
// call run again after a worker's shutdown, and what comes back, as the call's events
// (workflows/turn-results.ts). The turn runner hands it the directives.
import { ActivityCancellationType, condition, isCancellation, proxyActivities, proxyLocalActivities, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type { McpBridge } from '../activities/mcp/index';
import type { ToolActivities, ToolResult } from '../activities/tools/index';
import type { Json, TurnEvent } from '../machines/index';
import { approvalOf, type CommandSandbox, type PolicyVerdict, sameApproval, sandboxFor, toolKind, type SessionApproval, type ToolKind } from '../machines/policy';
import { bindScripts, scriptWordsOf, settleApproval, settlementOf, type ScriptHashes } from '../machines/script-binding';
import { interruptedToolResult, localResultTime, parseToolFacts, type ToolFacts } from '../machines/tool-result';
import type { ToolEntry, TurnHost, TurnRunnerConfig } from './turn-config';
import { stoppedByShutdown, toolFailure, toolResultEvent } from './turn-results';
import { routed, workspaceHostGone, type WorkspaceRoute } from './workspace-host';
import { hasPatch } from './run-format';
import { InfraWaiter } from './infra-wait';
import { AGENT_TOOL } from '../machines/sub-agents';
import { isLocalBudgetExceeded } from '../machines/local-budget';

type McpActivities = McpBridge['activities'];

/** What the tools need of the runner: activities tracked in its scopes, events applied to its turn. */
export interface ToolRunnerHooks {
  track<T>(activityId: string, run: () => Promise<T>): Promise<T>;
  deliver(turnId: string, source: string, event: TurnEvent): void;
  /** The runner's wait for its infrastructure (a workspace host that is away). */
  infra(): InfraWaiter;
}

export class TurnTools {
  /** The remembered approval each call runs under (its verdict's grounds, or the human's grant): it binds the files they run. */
  private readonly approvalOf = new Map<string, SessionApproval>();
  /** The sandbox each command's verdict named, until it runs. */
  private readonly sandboxes = new Map<string, CommandSandbox>();
  /** The files each command waiting for approval runs, hashed when it was asked. */
  private readonly askedScripts = new Map<string, ScriptHashes>();
  private readonly pendingHashes = new Map<string, Promise<undefined>>();

  constructor(
    private readonly config: TurnRunnerConfig,
    private readonly host: TurnHost,
    private readonly hooks: ToolRunnerHooks,
  ) {}

  /**
   * The kind of a call of `name`: the policy's own table for a built-in or MCP name, else the
   * kind the tool's definition declared (the setup's list; tool-kinds.ts).
   */
  kindOf(name: string): ToolKind {
    return toolKind(name, this.host.tools().find((t) => t.spec.name === name)?.kind);
  }

  /**
   * The policy's verdict on `callId`, as data: a call allowed under a remembered approval
   * binds the files it runs to it, and a command runs in the sandbox its verdict named (the
   * one a human was shown when asked).
   */
  decided(callId: string, verdict: PolicyVerdict): void {
    const approval = approvalOf(verdict);
    if (approval !== null) this.approvalOf.set(callId, approval);
    if (verdict.sandbox !== undefined) this.sandboxes.set(callId, verdict.sandbox);
  }

  /** The sandbox a command runs in: its verdict's (else the same policy's, for the same call). */
  private sandboxOf(callId: string, name: string, input: Json): { sandbox?: CommandSandbox } {
    const decided = this.sandboxes.get(callId);
    this.sandboxes.delete(callId);
    const kind = this.kindOf(name);
    if (kind !== 'execute') return {};
    return { sandbox: decided ?? sandboxFor(this.host.policy().policy, { tool: name, input, kind }) };
  }

  /** A human approved `callId` for the rest of the session, remembered as `approval`: its run binds the files it runs. */
  approvedForSession(callId: string, approval: SessionApproval): void {
    this.approvalOf.set(callId, approval);
  }

  /** The file hashes the approval a call runs under is bound to, for the activity to check. */
  private boundScriptsOf(callId: string): { scripts?: ScriptHashes } {
    const under = this.approvalOf.get(callId);
    // As remembered now: an earlier call under it may have bound it to the files it ran.
    const approval = under === undefined ? undefined : this.host.policy().approvals.find((a) => sameApproval(a, under));
    const asked = this.askedScripts.get(callId);
    this.askedScripts.delete(callId);
    const scripts = approval?.scripts !== undefined ? bindScripts(approval.scripts, asked ?? {}) : asked;
    return scripts !== undefined && Object.keys(scripts).length > 0 ? { scripts } : {};
  }

  /**
   * Hashes the workspace files a command waiting for approval runs (runs before this patch
   * did not). An approval given before the hashes arrive binds them all the same: they are
   * what the files said when the human was asked.
   */
  hashAtAsk(callId: string, name: string, input: Json): void {
    // A command of run_command's (the table's execute tools): a defined tool's input names no script.
    if (toolKind(name) !== 'execute' || scriptWordsOf(typeof input === 'object' && input !== null && !Array.isArray(input) ? input.command : undefined).length === 0 || !hasPatch(SCRIPTS_AT_ASK)) return;
    const hashing = proxyActivities<ToolActivities>(HASH_ACTIVITY_OPTIONS)
      .hashCommandScripts({ workspace: this.config.workspace, input })
      .then(
        (hashes) => (this.askedScripts.set(callId, hashes), undefined),
        () => undefined,
      );
    this.pendingHashes.set(callId, hashing);
  }

  /**
   * After a call ran under a remembered approval: the files it ran bind the approval (what
   * was there first stays bound), and a refusal because one changed drops the approval, so
   * the same call asks a human again.
   */
  private settleApproval(callId: string, facts: ToolFacts | undefined): void {
    const under = this.approvalOf.get(callId);
    this.approvalOf.delete(callId);
    if (under === undefined || this.host.updateApprovals === undefined) return;
    const settlement = settlementOf(facts);
    if (settlement !== null) this.host.updateApprovals((list) => settleApproval(list, under, settlement));
  }

  /**
   * The options of a call run as a local activity, or null when it runs as an activity. Only
   * a quick read-only built-in tool (read_file, list_dir: ToolEntry.local, from setup) on a
   * workspace this worker shares runs locally: in the workflow task that asked for it, so a
   * tool step costs a marker instead of three activity events and a workflow task of its
   * own. A workspace on one host's disk is read there, an MCP server may be slow, and a walk
   * or a command runs long and heartbeats: those stay activities. Runs set up before tools
   * said `local` have no such entry and replay as they ran.
   */
  private localOptions(tool: ToolEntry): LocalActivityOptions | null {
    // The flag is data (a hand-started agent's input carries it too): the policy's own table
    // (for a defined tool, its declared kind), not the entry's readOnly, must call the tool a
    // read; a built-in tool's kind cannot be declared otherwise, and an MCP tool's never is one.
    if (tool.local !== true || this.kindOf(tool.spec.name) !== 'read' || this.config.workspaceRoute || tool.activityOptions === undefined) return null;
    const { startToCloseTimeout, retry } = tool.activityOptions;
    return { startToCloseTimeout, retry, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED };
  }

  /** The session's store, as its model calls name it. */
  private storeTarget(): { store: string; storeId?: string } {
    const storeId = this.host.storeId?.();
    return { store: this.config.storeDir, ...(storeId !== undefined ? { storeId } : {}) };
  }

  run(turnId: string, callId: string, activityId: string, name: string, input: Json): void {
    const source = `tool ${name} (${callId})`;
    if (this.host.clientTools?.has(turnId, name)) {
      this.host.emit({ kind: 'tool.client_requested', turnId, callId, toolName: name, arguments: input });
      this.host.clientTools.run({ callId, name, input }, (event) => this.hooks.deliver(turnId, source, { type: 'tool', callId, event }));
      return;
    }
    const subAgents = this.host.subAgents;
    if (subAgents !== undefined && name === AGENT_TOOL) {
      // A child workflow in the call's scope: an interrupt cancels it as it cancels an activity.
      this.hooks.track(activityId, () => subAgents.run(turnId, callId, input)).then(
        (event) => this.hooks.deliver(turnId, source, { type: 'tool', callId, event }),
        (error: unknown) => {
          if (!isCancellation(error)) this.hooks.deliver(turnId, source, { type: 'tool', callId, event: toolFailure(name, error) });
        },
      );
      return;
    }
    const tool = this.host.tools().find((t) => t.spec.name === name);
    if (tool?.activityOptions === undefined) {
      this.hooks.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: `Unknown tool ${name}. Use one of the tools offered.` } });
      return;
    }
    const local = this.localOptions(tool);
    // Taken once: a rerun (after a worker's shutdown) runs in the same sandbox.
    const sandbox = this.sandboxOf(callId, name, input);
    // A large result is stored once, in the conversation store, and history keeps its preview
    // (machines/stored-output.ts). Runs from before it kept every result whole, and replay so.
    const storeOutput = tool.mcp !== true && hasPatch(TOOL_RESULTS_STORED) ? { storeOutput: this.storeTarget() } : {};
    // A read-only tool stopped by a worker's shutdown runs again (on another worker) under a
    // new activity id; the call keeps its id, so an interrupt still finds and cancels it.
    const run = (rerun: number, hostTry: number, route: WorkspaceRoute | null, asActivity: boolean) => {
      const options: ActivityOptions = {
        ...tool.activityOptions,
        ...routed(route),
        activityId: `${activityId}${rerun === 0 ? '' : `-rerun-${rerun}`}${hostTry === 0 ? '' : `-host-${hostTry}`}`,
        // The result of a cancelled command must mean its process is gone.
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      };
      const start = () =>
        tool.mcp
          ? proxyActivities<McpActivities>(options).callMcpTool({ tool: name, input, workspace: this.config.workspace, callId })
          : (local === null || asActivity ? proxyActivities<ToolActivities>(options) : proxyLocalActivities<ToolActivities>(local)).runTool({ workspace: this.config.workspace, tool: name, input, callId, ...sandbox, ...this.boundScriptsOf(callId), ...storeOutput });
      // An approval given before its files' hashes arrived waits for them: the run is checked against them all the same.
      const hashing = this.pendingHashes.get(callId);
      this.pendingHashes.delete(callId);
      return hashing === undefined ? start() : hashing.then(start);
    };
    const attempt = (rerun: number, hostTry = 0, delayMs = 0, asActivity = false): void => {
      // The route this try is sent on: an operator's host move (workflows/host-move.ts) changes
      // the run's route, and a try that waited for the old host is then sent to the new one.
      let sentOn: WorkspaceRoute | null = this.config.workspaceRoute ?? null;
      let sentAt = 0;
      this.hooks
        .track(activityId, async () => {
          // Waiting for the workspace host: a durable timer an interrupt cancels with the call,
          // ended early by a host move (the same timer when nothing moves: the commands are those of before).
          if (delayMs > 0) await condition(() => (this.config.workspaceRoute ?? null) !== sentOn, delayMs);
          sentOn = this.config.workspaceRoute ?? null;
          sentAt = this.host.now();
          return run(rerun, hostTry, sentOn, asActivity);
        })
        .then(
        (result: ToolResult) => {
          if (hostTry > 0) this.hooks.infra().recovered();
          // The facts come from an activity: checked, and dropped when they do not parse.
          const facts = parseToolFacts(result.facts);
          this.settleApproval(callId, facts);
          // A sandbox limit ends the call as `limit`, not as a plain error (runs from before
          // this patch recorded it as failed, and replay keeps them so).
          const limit = facts?.kind === 'command' && facts.limit !== undefined && hasPatch(LIMIT_STATUS);
          const apply = () => this.hooks.deliver(turnId, source, { type: 'tool', callId, event: toolResultEvent(result, facts, limit) });
          // A local call's result is stamped from its history, not from the activation's clock (machines/tool-result.ts).
          const at = !tool.mcp && local !== null && !asActivity ? localResultTime(sentAt, result) : null;
          if (at === null) apply();
          else this.host.stampAt(at, apply);
        },
        (error: unknown) => {
          if (isCancellation(error)) return;
          // A local call that would have scanned or taken more than a local call may
          // (machines/local-budget.ts) stopped before it did: the same call runs as an activity,
          // which heartbeats, hears of a cancel at once and shows in the Temporal UI. Only new
          // runs' local calls end so (a recorded one never did), and the patch marks where.
          if (local !== null && !asActivity && isLocalBudgetExceeded(error) && hasPatch(LOCAL_BUDGET_TO_ACTIVITY)) {
            attempt(rerun, hostTry, 0, true);
            return;
          }
          // The workspace's host is away: the call never started anywhere, so it is sent again
          // when the host may be back (a restart, a reboot), for as long as the infrastructure
          // table's horizon; then it fails, saying so (runs recorded before fail at once).
          const route = sentOn;
          const gone = workspaceHostGone(error, route);
          if (gone !== null) {
            // Moved meanwhile: the old host never took it (it never ran), so it goes to the new host now.
            if ((this.config.workspaceRoute ?? null) !== route) {
              attempt(rerun, hostTry + 1);
              return;
            }
            if (route !== null && InfraWaiter.enabled()) {
              const decision = this.hooks.infra().failed('workspace host', route.host, gone);
              if (decision.wait) {
                attempt(rerun, hostTry + 1, decision.delayMs);
                return;
              }
            }
            this.hooks.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: gone } });
            return;
          }
          if (stoppedByShutdown(error)) {
            // A read-only tool runs again on another worker. Anything else may have done part
            // of its work: it ends as worker_lost, like a crash, and the model decides (runs
            // before this patch started every call again, commands included).
            if ((tool.readOnly || !hasPatch(SHUTDOWN_IS_WORKER_LOST)) && rerun < MAX_SHUTDOWN_RERUNS) {
              attempt(rerun + 1);
              return;
            }
            if (!tool.readOnly) {
              this.hooks.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: interruptedToolResult(name, 'worker_lost', 'its worker shut down').content } });
              return;
            }
          }
          this.hooks.deliver(turnId, source, { type: 'tool', callId, event: toolFailure(name, error) });
        },
      );
    };
    attempt(0);
  }
}

/** A tool that is not read-only and was cut by a worker's shutdown ends as worker_lost instead of running again. */
const SHUTDOWN_IS_WORKER_LOST = 'shutdown-tool-is-worker-lost';
/** Commands waiting for approval have the files they run hashed (runs before it: not). */
const SCRIPTS_AT_ASK = 'scripts-hashed-at-ask';
const HASH_ACTIVITY_OPTIONS: ActivityOptions = { startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } };
/** A command stopped at a sandbox limit ends as `limit` (runs before it: `failed`). */
const LIMIT_STATUS = 'tool-limit-status';

/** A tool's large result is stored once in the conversation store (runs before it: whole in history). */
export const TOOL_RESULTS_STORED = 'tool-results-stored';

/** A local call past its budget runs again as an activity (runs before it: no local call ran out). */
const LOCAL_BUDGET_TO_ACTIVITY = 'local-budget-to-activity';

/** Deploys in a row could stop the same read-only call again; after this many it fails like any error. */
const MAX_SHUTDOWN_RERUNS = 3;
