// Paths as the rules see them: the model's paths normalized lexically against the workspace root,
// and the file names in MCP tools' arguments.
import { isRecord } from './util';

/** Argument names of MCP tools that name files (`path`, `paths`, `source`, `destination`, …). */
const PATH_ARGUMENT = /^(path|paths|file|files|filename|filepath|file_path|dir|directory|dirpath|folder|source|destination|src|dest|target|root|cwd|uri)$/i;

/** The file names in an MCP tool's arguments, top level and one level into arrays. */
export function pathArgumentsOf(input: unknown): string[] {
  if (!isRecord(input)) return [];
  const found: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (!PATH_ARGUMENT.test(key)) continue;
    if (typeof value === 'string') found.push(value);
    else if (Array.isArray(value)) for (const item of value) if (typeof item === 'string') found.push(item);
  }
  return found;
}

/** An MCP path argument as a workspace path: absolute inside the root, or relative to it. */
export function mcpWorkspacePath(raw: string, workspace: string | undefined): WorkspacePath {
  let text = raw.startsWith('file://') ? decodeURIComponentSafe(raw.slice('file://'.length)) : raw;
  if (text.startsWith('/')) {
    const root = workspace?.replace(/\/+$/, '');
    if (!root || !(text === root || text.startsWith(`${root}/`))) return { type: 'outside', raw };
    text = text === root ? '.' : text.slice(root.length + 1);
  }
  const normalized = normalizeWorkspacePath(text);
  return normalized.type === 'outside' ? { type: 'outside', raw } : normalized;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export type WorkspacePath =
  | { type: 'inside'; path: string }
  | { type: 'outside'; raw: string };

/**
 * Normalizes a path the model gave, lexically and posix-style, relative to the
 * workspace root. Absolute paths and paths that climb out with `..` are `outside`.
 */
export function normalizeWorkspacePath(raw: string): WorkspacePath {
  if (raw.startsWith('/') || raw.startsWith('~') || raw.includes('\u0000')) return { type: 'outside', raw };
  const segments: string[] = [];
  for (const segment of raw.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) return { type: 'outside', raw };
      segments.pop();
      continue;
    }
    segments.push(segment);
  }
  return { type: 'inside', path: segments.length ? segments.join('/') : '.' };
}
