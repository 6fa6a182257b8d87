// Workspace confinement. Every path the model gives is workspace-relative; it is
// checked lexically first (no absolute paths, no `..` out), and then on the real
// filesystem at the moment of use: files are opened with O_NOFOLLOW and the opened
// descriptor's own path (/proc/self/fd/N) must lie inside the workspace. Checking the
// descriptor rather than the name is what defeats a symlink swapped in after a check.
import { constants, type Stats } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { normalizeWorkspacePath } from '../../machines/policy';
import { agentMayRead, protectedDirOf, type ProtectedDir } from '../../machines/protected-paths';

/** A refusal or a missing file: the model gets it as a tool error, the activity does not fail. */
export class ToolError extends Error {
  override name = 'ToolError';
}

export interface Workspace {
  /** The real path of the workspace root, no trailing slash. */
  root: string;
  rootBuffer: Buffer;
}

/** Keel's own directory inside the workspace: artifacts, idempotency records, policy. */
export const KEEL_DIR = '.keel';

export async function openWorkspace(root: string): Promise<Workspace> {
  if (!path.isAbsolute(root)) throw new Error(`workspace must be an absolute path, got ${JSON.stringify(root)}`);
  const real = await fs.realpath(root).catch((error: unknown) => {
    throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? workspaceGone(root) : error;
  });
  // Workspaces are resolved to their real path once, when a session or goal starts
  // (client/workspace.ts); a path that resolves elsewhere now had a symlink swapped in.
  if (real !== path.resolve(root)) {
    throw new Error(`workspace ${root} now resolves to ${real} (a part of it was replaced by a symlink); refused: a workspace is pinned to the real path it started with`);
  }
  const stats = await fs.stat(real);
  if (!stats.isDirectory()) throw new Error(`workspace ${real} is not a directory`);
  return { root: real, rootBuffer: Buffer.from(real) };
}

/**
 * A workspace that vanished (deleted, unmounted, a host whose disk was replaced) is an
 * error, never re-created empty: an agent working in an empty directory would report
 * success on nothing. Code `workspace_gone` (machines/infra-retry.ts: permanent).
 */
export function workspaceGone(root: string): Error {
  return Object.assign(
    new Error(`workspace ${root} is gone (deleted or unmounted); Keel does not re-create it empty: restore it, or move the run to a host that has it (docs/deployment.md)`),
    { code: 'workspace_gone' },
  );
}

/**
 * The workspace-relative form of a path the model gave, or a clear refusal. Bytes
 * that are not UTF-8 in file names are shown to the model as `\xNN`; such escapes in
 * a path are turned back into those bytes.
 */
export function relativePath(raw: string): string {
  if (raw.startsWith('/')) {
    throw new ToolError(`absolute paths are not accepted (${JSON.stringify(raw)}): give a path relative to the workspace root`);
  }
  const normalized = normalizeWorkspacePath(raw);
  if (normalized.type === 'outside') {
    throw new ToolError(`path ${JSON.stringify(raw)} is outside the workspace: \`..\` may not climb above the workspace root`);
  }
  return normalized.path;
}

export function absoluteBuffer(ws: Workspace, rel: string): Buffer {
  return rel === '.' ? ws.rootBuffer : Buffer.concat([ws.rootBuffer, Buffer.from('/'), encodeName(rel)]);
}

/** Decodes `\xNN` escapes (bytes 0x80–0xFF only) back into raw bytes. */
export function encodeName(display: string): Buffer {
  if (!/\\x[89a-fA-F][0-9a-fA-F]/.test(display)) return Buffer.from(display);
  const pieces: Buffer[] = [];
  let last = 0;
  for (const match of display.matchAll(/\\x([89a-fA-F][0-9a-fA-F])/g)) {
    pieces.push(Buffer.from(display.slice(last, match.index)), Buffer.from([parseInt(match[1] ?? '0', 16)]));
    last = match.index + match[0].length;
  }
  pieces.push(Buffer.from(display.slice(last)));
  return Buffer.concat(pieces);
}

/** Shows a raw file name; bytes that are not valid UTF-8 become `\xNN`. */
export function displayName(raw: Buffer): string {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    return decoder.decode(raw);
  } catch {
    let out = '';
    let i = 0;
    while (i < raw.length) {
      const width = utf8Width(raw, i);
      if (width === 0) {
        out += `\\x${(raw[i] ?? 0).toString(16).padStart(2, '0')}`;
        i += 1;
      } else {
        out += raw.subarray(i, i + width).toString('utf8');
        i += width;
      }
    }
    return out;
  }
}

function utf8Width(bytes: Buffer, at: number): number {
  const b = bytes[at] ?? 0;
  const width = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (width <= 1) return width;
  for (let k = 1; k < width; k += 1) {
    const c = bytes[at + k];
    if (c === undefined || (c & 0xc0) !== 0x80) return 0;
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(at, at + width));
    return width;
  } catch {
    return 0;
  }
}

export function isInside(ws: Workspace, real: Buffer): boolean {
  if (real.equals(ws.rootBuffer)) return true;
  return (
    real.length > ws.rootBuffer.length &&
    real.subarray(0, ws.rootBuffer.length).equals(ws.rootBuffer) &&
    real[ws.rootBuffer.length] === 0x2f
  );
}

/**
 * The protected directory (`.keel/` or `.git/`, at any depth) a real (resolved) path lies
 * in. Checked on what is actually opened or renamed into, never on the text the model
 * gave: a symlink `cfg -> sub/.keel` makes `cfg/policy.json` that directory too.
 */
export function protectedDirReal(ws: Workspace, real: Buffer): ProtectedDir | undefined {
  if (!isInside(ws, real)) return undefined;
  return protectedDirOf(relativeOf(ws, real));
}

export function protectedRefusal(dir: ProtectedDir): string {
  return dir === '.keel'
    ? `${KEEL_DIR}/ holds Keel's own state and policy (at any depth); the agent may not write there`
    : '.git/ (at any depth) holds git configuration and hooks that run on the next git command; the agent may not write there';
}

export function relativeOf(ws: Workspace, real: Buffer): string {
  if (real.equals(ws.rootBuffer)) return '.';
  return displayName(real.subarray(ws.rootBuffer.length + 1));
}

/** The path the kernel holds for an open descriptor: the truth at the moment of use. */
async function descriptorPath(handle: FileHandle, fallback: Buffer): Promise<Buffer> {
  try {
    return await fs.readlink(`/proc/self/fd/${handle.fd}`, { encoding: 'buffer' });
  } catch {
    // Without /proc (not Linux): resolve the name and prove it is the same inode.
    const real = await fs.realpath(fallback, { encoding: 'buffer' });
    const [a, b] = await Promise.all([handle.stat(), fs.stat(real)]);
    if (a.ino !== b.ino || a.dev !== b.dev) throw new ToolError('the file changed while it was being opened; try again');
    return real;
  }
}

export interface OpenedFile {
  handle: FileHandle;
  /** The real path of what was opened (inside the workspace). */
  real: Buffer;
  rel: string;
  stats: Stats;
}

type OpenIntent = 'read' | 'directory';

export interface OpenOptions {
  /**
   * Keel's own reads (policy, records) may read a file with several hard links; the
   * agent's tools may not: the other names of such a file may be outside the workspace,
   * and nothing on this side can tell where they are.
   */
  allowHardLinks?: boolean;
  /** Keel's own reads of its records and policy; the agent may not read `.keel/` but for the root's artifacts. */
  keelOwn?: boolean;
}

/**
 * Opens an existing file or directory inside the workspace for reading. A symlink as
 * the last component is followed only if its target is inside; anything the opened
 * descriptor turns out to be outside is refused and closed.
 */
export async function openExisting(ws: Workspace, rawPath: string, intent: OpenIntent, options: OpenOptions = {}): Promise<OpenedFile> {
  const rel = relativePath(rawPath);
  let target = absoluteBuffer(ws, rel);
  const flags =
    constants.O_RDONLY | constants.O_NOFOLLOW | (intent === 'directory' ? constants.O_DIRECTORY : 0) | constants.O_NONBLOCK;
  let handle: FileHandle;
  try {
    handle = await fs.open(target, flags);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ELOOP' || (code === 'ENOTDIR' && intent === 'directory' && (await isSymlink(target)))) {
      // The last component is a symlink: follow it only to a place inside.
      target = await realInside(ws, target, rawPath);
      handle = await fs.open(target, flags).catch((inner: unknown) => {
        throw fsToolError(inner, rawPath, intent);
      });
    } else {
      throw fsToolError(error, rawPath, intent);
    }
  }
  try {
    const real = await descriptorPath(handle, target);
    if (!isInside(ws, real)) {
      throw new ToolError(`path ${JSON.stringify(rawPath)} resolves outside the workspace (through a symlink); refused`);
    }
    if (!options.keelOwn && !agentMayRead(relativeOf(ws, real))) {
      throw new ToolError(`${rawPath} is in .keel/: .keel/ holds Keel's own state and other sessions' conversations; the agent may not read it (only .keel/artifacts/ at the workspace root)`);
    }
    const stats = await handle.stat();
    if (intent === 'read' && stats.isDirectory()) throw new ToolError(`${rawPath} is a directory; use list_dir`);
    if (intent === 'read' && !stats.isFile()) throw new ToolError(`${rawPath} is not a regular file`);
    if (intent === 'read' && stats.nlink > 1 && !options.allowHardLinks) throw hardLinkRefusal(rawPath, stats.nlink);
    return { handle, real, rel, stats };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Reads a directory through its verified descriptor, names as raw bytes. */
export async function readDirectory(opened: OpenedFile): Promise<{ name: Buffer; kind: EntryKind }[]> {
  const dirPath = await directoryAccessPath(opened);
  const entries = await fs.readdir(dirPath, { withFileTypes: true, encoding: 'buffer' });
  return entries.map((entry) => ({
    name: entry.name,
    kind: entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : entry.isFile() ? 'file' : 'other',
  }));
}

export type EntryKind = 'dir' | 'file' | 'symlink' | 'other';

async function directoryAccessPath(opened: OpenedFile): Promise<Buffer | string> {
  // /proc/self/fd/N names exactly the directory that was verified, whatever happens
  // to the path afterwards.
  const viaFd = `/proc/self/fd/${opened.handle.fd}`;
  try {
    await fs.access(viaFd);
    return viaFd;
  } catch {
    return opened.real;
  }
}

export function hardLinkRefusal(rawPath: string, links: number): ToolError {
  return new ToolError(
    `${rawPath} has ${links} hard links; its other names may be outside the workspace, so Keel's tools do not read it. ` +
      'Ask the human to replace it with a plain copy (cp --remove-destination) if it is meant to be read.',
  );
}

async function isSymlink(target: Buffer): Promise<boolean> {
  try {
    return (await fs.lstat(target)).isSymbolicLink();
  } catch {
    return false;
  }
}

function outsideRefusal(rawPath: string): ToolError {
  return new ToolError(`path ${JSON.stringify(rawPath)} is a symlink that leads outside the workspace; refused`);
}

/** Whether a symlink's text, resolved lexically from where it is, stays inside the workspace. */
async function lexicallyInside(ws: Workspace, link: Buffer): Promise<boolean> {
  const text = await fs.readlink(link, { encoding: 'buffer' }).catch(() => undefined);
  if (!text) return false;
  const resolved = path.resolve(path.dirname(link.toString('latin1')), text.toString('latin1'));
  return isInside(ws, Buffer.from(resolved, 'latin1'));
}

async function realInside(ws: Workspace, target: Buffer, rawPath: string): Promise<Buffer> {
  let real: Buffer;
  try {
    real = await fs.realpath(target, { encoding: 'buffer' });
  } catch (error) {
    // Missing is said only of a target that lies inside lexically: of one outside, the
    // answer would tell the agent whether a host path exists.
    if (errorCode(error) === 'ENOENT' && (await lexicallyInside(ws, target))) throw new ToolError(`${rawPath} is a symlink to a missing target`);
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'EACCES' || errorCode(error) === 'ELOOP') throw outsideRefusal(rawPath);
    throw fsToolError(error, rawPath, 'read');
  }
  // Neither where it leads nor whether that exists: the host's file system is not the agent's to map.
  if (!isInside(ws, real)) throw outsideRefusal(rawPath);
  return real;
}

/**
 * Writes a whole file atomically inside the workspace: a temporary file is created
 * next to the target with O_EXCL|O_NOFOLLOW, verified through its descriptor, filled,
 * and renamed over the target. A crash leaves the old content or the new, never half.
 */
export async function writeFileInside(
  ws: Workspace,
  rawPath: string,
  content: Buffer | string,
  options: { allowKeelDir?: boolean; mode?: number } = {},
): Promise<{ rel: string; created: boolean }> {
  try {
    return await writeFileInsideUnsafe(ws, rawPath, content, options);
  } catch (error) {
    throw fsToolError(error, rawPath, 'write');
  }
}

async function writeFileInsideUnsafe(
  ws: Workspace,
  rawPath: string,
  content: Buffer | string,
  options: { allowKeelDir?: boolean; mode?: number },
): Promise<{ rel: string; created: boolean }> {
  const rel = relativePath(rawPath);
  if (rel === '.') throw new ToolError('a file path is required');
  const lexical = protectedDirOf(rel);
  if (!options.allowKeelDir && lexical) throw new ToolError(protectedRefusal(lexical));
  let targetAbs = absoluteBuffer(ws, rel);
  let existing: Stats | undefined;
  try {
    existing = await fs.lstat(targetAbs);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw fsToolError(error, rawPath, 'write');
  }
  if (existing?.isSymbolicLink()) {
    // Writing through a symlink writes its target, which must be inside.
    targetAbs = await realInside(ws, targetAbs, rawPath);
    existing = await fs.stat(targetAbs);
  }
  if (existing?.isDirectory()) throw new ToolError(`${rawPath} is a directory`);
  const base = path.basename(targetAbs.toString('latin1'));
  const baseBytes = Buffer.from(base, 'latin1');
  // Checked before any directory is created: a refused write leaves nothing behind.
  const guardKeel = (real: Buffer) => {
    const dir = options.allowKeelDir ? undefined : protectedDirReal(ws, real);
    if (dir) throw new ToolError(protectedRefusal(dir));
  };
  guardKeel(targetAbs);
  const parentReal = await ensureParentInside(ws, targetAbs, rawPath, guardKeel);
  guardKeel(Buffer.concat([parentReal, Buffer.from('/'), baseBytes]));
  const tempPath = Buffer.concat([parentReal, Buffer.from(`/.keel-tmp-${randomBytes(6).toString('hex')}-`), baseBytes]);
  const handle = await fs.open(
    tempPath,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    options.mode ?? existing?.mode ?? 0o644,
  );
  let tempReal: Buffer;
  try {
    tempReal = await descriptorPath(handle, tempPath);
    if (!isInside(ws, tempReal)) {
      await fs.unlink(tempReal).catch(() => undefined);
      throw new ToolError(`path ${JSON.stringify(rawPath)} resolves outside the workspace (a directory changed under it); refused`);
    }
    const dir = options.allowKeelDir ? undefined : protectedDirReal(ws, tempReal);
    if (dir) {
      await fs.unlink(tempReal).catch(() => undefined);
      throw new ToolError(protectedRefusal(dir));
    }
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  const finalPath = Buffer.concat([tempReal.subarray(0, tempReal.lastIndexOf(0x2f)), Buffer.from('/'), baseBytes]);
  try {
    await fs.rename(tempReal, finalPath);
  } catch (error) {
    await fs.unlink(tempReal).catch(() => undefined);
    throw fsToolError(error, rawPath, 'write');
  }
  return { rel: relativeOf(ws, finalPath), created: existing === undefined };
}

/** Creates missing parent directories one at a time, never through a symlink out. */
async function ensureParentInside(ws: Workspace, targetAbs: Buffer, rawPath: string, guard: (real: Buffer) => void): Promise<Buffer> {
  const parent = targetAbs.subarray(0, targetAbs.lastIndexOf(0x2f));
  const missing: Buffer[] = [];
  let existing = parent;
  for (;;) {
    try {
      const stats = await fs.stat(existing);
      if (!stats.isDirectory()) throw new ToolError(`cannot create ${rawPath}: ${relativeOf(ws, existing)} is not a directory`);
      break;
    } catch (error) {
      if (error instanceof ToolError) throw error;
      if (errorCode(error) !== 'ENOENT') throw fsToolError(error, rawPath, 'write');
      const slash = existing.lastIndexOf(0x2f);
      missing.unshift(existing.subarray(slash + 1));
      existing = existing.subarray(0, slash);
    }
  }
  let real = await fs.realpath(existing, { encoding: 'buffer' });
  if (!isInside(ws, real)) throw new ToolError(`path ${JSON.stringify(rawPath)} resolves outside the workspace (through a symlink); refused`);
  guard(Buffer.concat([real, ...missing.flatMap((name) => [Buffer.from('/'), name])]));
  for (const name of missing) {
    real = Buffer.concat([real, Buffer.from('/'), name]);
    await fs.mkdir(real).catch((error: unknown) => {
      if (errorCode(error) !== 'EEXIST') throw fsToolError(error, rawPath, 'write');
    });
    const check = await fs.lstat(real);
    if (!check.isDirectory()) throw new ToolError(`cannot create ${rawPath}: ${relativeOf(ws, real)} is not a directory`);
  }
  return real;
}

export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

/** Filesystem errors the model can act on become tool errors; the rest are infrastructure faults. */
export function fsToolError(error: unknown, rawPath: string, intent: OpenIntent | 'write'): Error {
  if (error instanceof ToolError) return error;
  switch (errorCode(error) ?? '') {
    case 'ENOENT':
      return new ToolError(`no such ${intent === 'directory' ? 'directory' : 'file'}: ${rawPath}`);
    case 'ENOTDIR':
      return new ToolError(intent === 'directory' ? `${rawPath} is not a directory` : `a parent of ${rawPath} is not a directory`);
    case 'EISDIR':
      return new ToolError(`${rawPath} is a directory`);
    case 'EACCES':
    case 'EPERM':
      return new ToolError(`permission denied: ${rawPath}`);
    case 'ELOOP':
      return new ToolError(`${rawPath}: too many levels of symbolic links`);
    case 'ENAMETOOLONG':
      return new ToolError(`${rawPath}: name too long`);
    default:
      return error instanceof Error ? error : new Error(String(error));
  }
}
