// A tool call waiting for a human, shown whole before anyone answers `y`: its id, tool,
// why it was asked, every argument (pretty JSON, nothing cut) and, for an edit or a write,
// the diff it would make. `keel approve`, `keel chat` and `keel goal` all show this; what a
// person approves is what they saw. Control characters a model put in the arguments are
// shown escaped, so that a call cannot redraw the terminal to hide part of itself.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { Json } from '../../machines/index';
import { diffOf } from '../call-diff';

export interface WaitingCall {
  callId: string;
  name: string;
  input: Json;
  reason: string | null;
  taskId?: string;
}

const WORKSPACE = defineSearchAttributeKey('KeelWorkspace', SearchAttributeType.KEYWORD);

/** The workspace a goal or session runs in (its search attribute), for the diff's "before". */
export async function workspaceOf(handle: Pick<WorkflowHandle, 'describe'>): Promise<string | null> {
  try {
    return (await handle.describe()).typedSearchAttributes.get(WORKSPACE) ?? null;
  } catch {
    return null;
  }
}

/** Every control character but newline and tab, as a visible escape. */
export function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The call as lines: header, reason, the command (run_command), arguments, diff. */
export async function callLines(call: WaitingCall, workspace: string | null): Promise<string[]> {
  const lines = [`tool call ${call.callId}: ${call.name}${call.taskId ? ` (task ${call.taskId})` : ''}`];
  if (call.reason) lines.push(`  asked because: ${visible(call.reason)}`);
  const input = call.input;
  if (call.name === 'run_command' && input && typeof input === 'object' && !Array.isArray(input)) {
    const command = input.command;
    const text = typeof command === 'string' ? command : Array.isArray(command) ? command.map((a) => JSON.stringify(a)).join(' ') : null;
    if (text !== null) lines.push('  command:', ...visible(text).split('\n').map((l) => `    $ ${l}`));
  }
  // JSON.stringify escapes every control character inside strings; nothing is shortened.
  lines.push('  arguments:', ...JSON.stringify(input, null, 2).split('\n').map((l) => `    ${l}`));
  const diff = await diffOf(call.name, input, workspace);
  if (diff !== null) lines.push('  diff:', ...visible(diff).replace(/\n$/, '').split('\n').map((l) => `    ${l}`));
  return lines;
}
