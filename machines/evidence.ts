// What counts as evidence of a task attempt (seed 002 Autonomy loop: the critic judges the
// work from it): the files the agent's tools changed and the commands it ran with their
// exit codes. Folded from the event log's `tool.call` / `tool.result` entries, reading only
// the results' structured facts (machines/tool-result.ts) — never the text the model reads.
import type { LogEvent, ToolResultStatus } from './events';
import { refusalText, type LimitKind } from './tool-result';

export interface CommandEvidence {
  command: string;
  /** null: the command did not exit on its own (killed, timed out, denied, never run). */
  exitCode: number | null;
  status: ToolResultStatus;
  /** Why the worker refused to run it at all ("run_command refused: sandbox unavailable"); absent when it ran or was answered otherwise. */
  refused?: string;
  /** The sandbox limit that stopped it (status `limit`). */
  limit?: LimitKind;
}

/** How a command ended, in the words every report uses: refused, stopped at a limit, an exit code, or the call's status. */
export function commandEnding(c: { exitCode: number | null; status: string; refused?: string; limit?: LimitKind }): string {
  if (c.refused !== undefined) return c.refused;
  if (c.limit !== undefined) return `limit: stopped at its ${c.limit} limit`;
  return c.exitCode === null ? c.status : `exit code ${c.exitCode}`;
}

export interface Evidence {
  filesChanged: string[];
  commands: CommandEvidence[];
  /** The agent's own summary, set when the task's outcome is decided (machines/task-outcome.ts). */
  summary: string | null;
}

export interface EvidenceState {
  evidence: Evidence;
  /** Commands announced (tool.call) and not answered yet, by call id: a call denied or
   *  cancelled before it ran has no facts, but the attempt to run it is evidence too. */
  pending: Readonly<Record<string, string>>;
}

/** The same bound the goal's report schema takes (workflows/definitions.ts). */
export const MAX_EVIDENCE_ITEMS = 10_000;

export const EMPTY_EVIDENCE: EvidenceState = { evidence: { filesChanged: [], commands: [], summary: null }, pending: {} };

export function foldEvidence(state: EvidenceState, event: LogEvent): EvidenceState {
  if (event.kind === 'tool.call') {
    if (event.toolName !== 'run_command') return state;
    return { ...state, pending: { ...state.pending, [event.callId]: commandText(event.arguments) } };
  }
  if (event.kind !== 'tool.result') return state;
  const { [event.callId]: announced, ...pending } = state.pending;
  const facts = event.facts;
  let { filesChanged, commands } = state.evidence;
  if (facts?.kind === 'files_changed' && event.status === 'success') {
    const fresh = facts.filesChanged.filter((f) => !filesChanged.includes(f));
    if (fresh.length > 0) filesChanged = [...filesChanged, ...fresh].slice(0, MAX_EVIDENCE_ITEMS);
  }
  if (facts?.kind === 'command') {
    const limit = facts.limit !== undefined && event.status === 'limit' ? { limit: facts.limit } : {};
    commands = [...commands, { command: facts.command, exitCode: facts.exitCode, status: event.status, ...limit }].slice(-MAX_EVIDENCE_ITEMS);
  } else if (facts?.kind === 'refused' && announced !== undefined) {
    commands = [...commands, { command: announced, exitCode: null, status: event.status, refused: refusalText('run_command', facts.reason) }].slice(-MAX_EVIDENCE_ITEMS);
  } else if (announced !== undefined) {
    commands = [...commands, { command: announced, exitCode: null, status: event.status }].slice(-MAX_EVIDENCE_ITEMS);
  }
  if (announced === undefined && filesChanged === state.evidence.filesChanged && commands === state.evidence.commands) return state;
  return { evidence: { ...state.evidence, filesChanged, commands }, pending };
}

/** The model's `command` argument as a line: a shell string as it is, an argv array joined. */
function commandText(args: unknown): string {
  const command = typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>).command : undefined;
  if (typeof command === 'string') return command;
  if (Array.isArray(command) && command.every((a) => typeof a === 'string')) return command.join(' ');
  return JSON.stringify(command ?? null);
}
