// The command sandbox: run_command runs under bubblewrap (bwrap), in the spirit of the
// Linux sandboxes of Codex CLI and Claude Code. The command sees the system directories
// read-only (/usr, /etc, /opt …), the workspace writable (or read-only), Keel's own
// `.keel/` read-only, a private /tmp, its own process namespace (it cannot see or signal
// the worker or other commands, nor read their environment) and, unless the policy grants
// the network, its own network namespace with only a loopback of its own. Anything else on
// the host — home directories, other workspaces, /var, /srv — is simply not there.
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type CommandSandbox } from '../../machines/policy';
import { keelEnv } from '../../worker/env';
import { protectedMountArgs } from './protected-mounts';
import { KEEL_DIR } from './workspace';

export const BWRAP = 'bwrap';

/** Read-only system trees; each is mounted when it exists on the host. */
const SYSTEM_DIRS = ['/usr', '/etc', '/opt', '/nix', '/snap'];
/** Often symlinks into /usr on merged-/usr systems; mirrored as they are. */
const SYSTEM_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Files under /etc a command has no business reading, even read-only. */
const MASKED_FILES = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
/** Where resolv.conf may point on systemd hosts; needed only with the network. */
const NETWORK_DIRS = ['/run/systemd/resolve', '/run/resolvconf'];
/** HOME inside the sandbox: the real home is not mounted. */
export const SANDBOX_HOME = '/tmp/home';

export interface SandboxSpec {
  sandbox: CommandSandbox;
  /** Real path of the workspace root. */
  workspace: string;
  /** Real path of the working directory (inside the workspace). */
  cwd: string;
  /** Extra host paths mounted read-only (the operator's KEEL_SANDBOX_READ). */
  extraRead?: readonly string[];
}

/** The bwrap arguments that confine one command, up to and including `--`. */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (!spec.sandbox.network) args.push('--unshare-net');
  for (const dir of SYSTEM_DIRS) if (existsSync(dir)) args.push('--ro-bind', dir, dir);
  for (const link of SYSTEM_LINKS) {
    const stats = lstatOrUndefined(link);
    if (stats?.isSymbolicLink()) args.push('--symlink', readlinkSync(link), link);
    else if (stats?.isDirectory()) args.push('--ro-bind', link, link);
  }
  for (const file of MASKED_FILES) if (existsSync(file)) args.push('--ro-bind', '/dev/null', file);
  if (spec.sandbox.network) for (const dir of NETWORK_DIRS) args.push('--ro-bind-try', dir, dir);
  args.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--dir', SANDBOX_HOME);
  for (const extra of spec.extraRead ?? []) if (path.isAbsolute(extra)) args.push('--ro-bind-try', extra, extra);
  args.push(spec.sandbox.level === 'read-only' ? '--ro-bind' : '--bind', spec.workspace, spec.workspace);
  // After the workspace: this mount lies over it. A mount point cannot be renamed or
  // removed, so `.keel/` cannot be swapped for a directory of the command's making.
  const keel = path.join(spec.workspace, KEEL_DIR);
  args.push('--ro-bind', keel, keel);
  // Every .git and nested .keel/ (machines/protected-paths.ts), laid over the workspace.
  args.push(...protectedMountArgs(spec.workspace));
  args.push('--setenv', 'HOME', SANDBOX_HOME, '--chdir', spec.cwd, '--');
  return args;
}

/** Makes sure `.keel/` exists as a real directory, so that it can be mounted read-only. */
export async function ensureKeelDir(workspace: string): Promise<void> {
  const keel = path.join(workspace, KEEL_DIR);
  await fs.mkdir(keel, { recursive: true });
  const stats = await fs.lstat(keel);
  if (!stats.isDirectory()) throw new Error(`${keel} is not a directory; Keel's state directory was replaced`);
}

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

export type SandboxProbe = { ok: true } | { ok: false; reason: string };

let probe: Promise<SandboxProbe> | undefined;

/**
 * Whether bubblewrap can build the sandbox here: it needs the `bwrap` program and user
 * namespaces (a default Docker seccomp profile forbids them). Checked once per process
 * with the same namespaces a real command gets.
 */
export function probeSandbox(): Promise<SandboxProbe> {
  probe ??= runProbe(BWRAP);
  return probe;
}

export async function runProbe(program: string): Promise<SandboxProbe> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-sandbox-probe-'));
  try {
    await ensureKeelDir(dir);
    const real = await fs.realpath(dir);
    const args = bwrapArgs({ sandbox: { level: 'workspace-write', network: false }, workspace: real, cwd: real });
    return await new Promise<SandboxProbe>((resolve) => {
      const child = spawn(program, [...args, '/bin/sh', '-c', 'exit 0'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      child.once('error', (error) => resolve({ ok: false, reason: `${program} cannot be started (${error.message}); install the Debian package bubblewrap` }));
      child.once('close', (code) =>
        resolve(code === 0 ? { ok: true } : { ok: false, reason: `${program} failed (exit ${code}): ${stderr.trim().split('\n')[0] ?? ''} — user namespaces are probably not allowed here` }),
      );
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** The one line a worker prints at start about its sandbox. */
export function sandboxStartupLine(result: SandboxProbe): string {
  return result.ok
    ? 'sandbox: bubblewrap works; run_command is confined to the workspace (policy "sandbox" chooses the level)'
    : `sandbox: UNAVAILABLE — ${result.reason}. run_command is refused unless the policy sets "sandbox": "off"`;
}

/** Extra read-only paths from the operator: KEEL_SANDBOX_READ=/root/.pyenv:/opt/tools. */
export function extraReadPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  return (keelEnv(env, 'KEEL_SANDBOX_READ') ?? '').split(':').filter((p) => p !== '' && path.isAbsolute(p));
}
