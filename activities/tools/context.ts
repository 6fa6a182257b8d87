// What a tool implementation may use: the workspace, a key unique to this tool call
// (stable across retries), a way to report progress, and the cancellation signal.
import { type CommandSandbox } from '../../machines/policy';
import type { ScriptHashes } from '../../machines/script-binding';
import { type SandboxProbe } from './sandbox';
import { type Workspace } from './workspace';

export interface ToolContext {
  ws: Workspace;
  /** Unique per tool call and the same on every retry of it (workflowId + activityId). */
  callKey: string;
  /** Reports progress; in an activity this is a heartbeat. */
  progress(details: unknown): void;
  signal: AbortSignal;
  /** Environment variable names a command may inherit from the worker. */
  envAllowList: readonly string[];
  outputCapBytes: number;
  /** How run_command is confined; absent means the safe default (workspace-write, no network). */
  sandbox?: CommandSandbox;
  /** Extra host paths commands may read (KEEL_SANDBOX_READ). */
  sandboxRead?: readonly string[];
  /** The workspace files the approval that let this call run is bound to, by content hash (machines/script-binding.ts). */
  boundScripts?: ScriptHashes;
  /**
   * Set when the call runs as a local activity, inside its workflow task: how much it may scan
   * and until when (activities/tools/local-budget.ts). A tool that would go past it throws
   * LocalBudgetExceeded and the call runs again as an activity.
   */
  localBudget?: { bytes: number; deadline: number };
  /** Whether bubblewrap works here, as the worker found at start; probed on first use when absent. */
  sandboxProbe?: SandboxProbe;
}

export const DEFAULT_SANDBOX: CommandSandbox = { level: 'workspace-write', network: false };

export const DEFAULT_ENV_ALLOW_LIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TERM',
  'TMPDIR',
  'TZ',
];
