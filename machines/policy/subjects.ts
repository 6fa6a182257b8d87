// Subjects: what in a call's input the rules look at (the command's parts, a path, several paths,
// or nothing).
import { agentMayRead, protectedDirOf } from '../protected-paths';
import { commandViews } from './command-views';
import type { PolicyRequest } from './evaluate';
import { mcpWorkspacePath, normalizeWorkspacePath, pathArgumentsOf, type WorkspacePath } from './paths';
import { splitShellCommand } from './shell';
import { MCP_TOOL_PREFIX, type ToolKind } from './tool-kinds';
import { isRecord, stringField } from './util';

export interface CommandPart {
  tokens: string[];
  /** Contains something the tokenizer cannot prove harmless: `$(...)`, backticks, a redirect to a file. */
  unprovable: boolean;
  /** What another part really runs (command-views.ts): judged by deny and ask rules only. */
  view?: true;
}

export type Subject =
  | { type: 'none' }
  | { type: 'path'; path: WorkspacePath }
  /** An MCP tool's file arguments (at least one). */
  | { type: 'paths'; paths: WorkspacePath[] }
  | { type: 'command'; parts: CommandPart[] };

/**
 * `.keel/` and `.git/` at any depth are never written by a tool (they grant or run things
 * later); `.keel/` is not read either, but for the workspace's own `.keel/artifacts/`.
 * A command may not start inside either. See machines/protected-paths.ts.
 */
export function protectedRefusal(tool: string, kind: ToolKind, subject: Subject, input: unknown): string | undefined {
  const cwd = kind === 'execute' && isRecord(input) ? stringField(input, 'cwd') : undefined;
  const paths = subject.type === 'path' ? [subject.path] : subject.type === 'paths' ? subject.paths : cwd !== undefined ? [normalizeWorkspacePath(cwd)] : [];
  for (const p of paths) {
    if (p.type !== 'inside') continue;
    const dir = protectedDirOf(p.path);
    if (!dir) continue;
    const why = dir === '.keel' ? "holds Keel's own state and policy (another session's too)" : 'holds git configuration and hooks that run on the next git command';
    if (kind === 'read') {
      if (agentMayRead(p.path)) continue;
      return `${tool}: ${p.path} is protected: ${dir}/ ${why}; the agent may not read it (only .keel/artifacts/ at the workspace root)`;
    }
    if (kind === 'execute') return `${tool}: a command may not run inside ${p.path}: ${dir}/ ${why}`;
    return `${tool}: ${p.path} is protected: ${dir}/ ${why}; the agent may not ${kind === 'mcp' ? 'name' : 'write'} it`;
  }
  return undefined;
}

export function subjectOf(request: PolicyRequest): Subject {
  const input = isRecord(request.input) ? request.input : {};
  switch (request.tool) {
    case 'read_file':
    case 'write_file':
    case 'edit_file':
      return { type: 'path', path: normalizeWorkspacePath(stringField(input, 'path') ?? '') };
    case 'list_dir':
    case 'glob':
    case 'grep':
      return { type: 'path', path: normalizeWorkspacePath(stringField(input, 'path') ?? '.') };
    case 'run_command': {
      const cwd = normalizeWorkspacePath(stringField(input, 'cwd') ?? '.');
      if (cwd.type === 'outside') return { type: 'path', path: cwd };
      const parts = commandParts(input.command);
      return { type: 'command', parts: [...parts, ...parts.flatMap((part) => commandViews(part, splitShellCommand).map((v) => ({ ...v, view: true as const })))] };
    }
    default: {
      if (!request.tool.startsWith(MCP_TOOL_PREFIX)) return { type: 'none' };
      const paths = pathArgumentsOf(input).map((raw) => mcpWorkspacePath(raw, request.workspace));
      return paths.length ? { type: 'paths', paths } : { type: 'none' };
    }
  }
}

/** Every simple command a run_command input runs: its parts, and what wrappers and `sh -c` inside them run. */
export function commandPartsOf(command: unknown): CommandPart[] {
  const parts = commandParts(command);
  return [...parts, ...parts.flatMap((part) => commandViews(part, splitShellCommand))];
}

function commandParts(command: unknown): CommandPart[] {
  if (Array.isArray(command)) {
    const tokens = command.filter((token): token is string => typeof token === 'string');
    // argv goes to execve directly: no shell, so no operators to split on.
    return [{ tokens, unprovable: tokens.length !== command.length || tokens.length === 0 }];
  }
  if (typeof command !== 'string') return [{ tokens: [], unprovable: true }];
  return splitShellCommand(command);
}
