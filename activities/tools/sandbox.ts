// The command sandbox: run_command and MCP servers run under bubblewrap (bwrap), in the
// spirit of the Linux sandboxes of Codex CLI and Claude Code. The process sees the system
// directories read-only (/usr, /etc, /opt …), the workspace writable (or read-only), Keel's
// own `.keel/` read-only, a private size-limited /tmp, its own user namespace with no
// capabilities (even when the worker runs as root), its own process, IPC, UTS and network
// namespaces, a seccomp filter (seccomp.ts) and resource limits (limits.ts). The network
// is a grant: with it, the only way out is Keel's proxy (network-proxy.ts), reached
// through a Unix socket mounted into the sandbox. Anything else on the host — home
// directories, other workspaces, /var, /srv — is simply not there.
//
// Nothing here is taken on trust: before the command runs, a few lines of shell inside the
// sandbox check what it really holds (uid map, capabilities, no_new_privs, seccomp, a
// syscall the filter must refuse) and report on a pipe the command never sees; a sandbox
// that fails the check never runs the command.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fstatSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type CommandSandbox } from '../../machines/policy';
import { keelEnv } from '../../shared/env';
import { findProtectedPaths } from './protected-mounts';
import { fdPath, openBeneath, pinKeelDir, pinWorkspace } from './pinned-workspace';
import { KEEL_DIR, ToolError } from './workspace';
import { limitArgs, type SandboxLimits } from './limits';
import { pidsHeld } from './command-cgroup';
import { currentSeccompArch, seccompFilter } from './seccomp';

export const BWRAP = 'bwrap';

/** Read-only system trees; each is mounted when it exists on the host. */
const SYSTEM_DIRS = ['/usr', '/etc', '/opt', '/nix', '/snap'];
/** Often symlinks into /usr on merged-/usr systems; mirrored as they are. */
const SYSTEM_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Files under /etc a command has no business reading, even read-only. */
const MASKED_FILES = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
/** Where Keel's proxy socket appears inside the sandbox, and the port its forwarder listens on. */
export const SANDBOX_PROXY_DIR = '/run/keel-net';
export const SANDBOX_PROXY_SOCKET = `${SANDBOX_PROXY_DIR}/proxy.sock`;
export const SANDBOX_PROXY_PORT = 3128;
/** Descriptors of the sandbox's start: the seccomp program in, the self-check verdict out. */
const SECCOMP_FD = 3;
const VERDICT_FD = 4;
/** The first descriptor of the mounts' sources (PreparedMounts), numbered up from here in the child. */
const FIRST_MOUNT_FD = 5;
/** Exit code of the self-check when it refuses to run the command. */
export const SELF_CHECK_FAILED = 125;
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
  /** Resource limits of the call. */
  limits: SandboxLimits;
  /** With the network granted: the directory holding Keel's proxy socket (`proxy.sock`) on the host. */
  proxyDir?: string;
}

/**
 * The workspace's mounts, made from descriptors opened before the sandbox starts: the
 * workspace itself, its `.keel/`, every protected path and nested workspace under it
 * (protected-mounts.ts). bubblewrap binds the descriptors (`--bind-fd`), so nothing is
 * looked up by name between Keel's check and the mount.
 */
export interface PreparedMounts {
  /** Host descriptors; the child gets them as FIRST_MOUNT_FD, FIRST_MOUNT_FD + 1, … */
  fds: number[];
  /** Who owns the workspace root: as root, the sandbox runs as this user (sandboxIdentity). */
  owner: { uid: number; gid: number };
  /** The bwrap arguments that mount them. */
  args: string[];
  /** Closes the host's descriptors (spawnSandboxed does, once the child holds them). */
  close(): void;
}

/** Opens the workspace and what lies over it, for one sandbox (spawnSandboxed consumes the result). */
export async function prepareMounts(spec: Pick<SandboxSpec, 'workspace' | 'sandbox'>): Promise<PreparedMounts> {
  const fds: number[] = [];
  const args: string[] = [];
  const close = () => {
    for (const fd of fds.splice(0)) closeSync(fd);
  };
  const bind = (fd: number, dest: string, readOnly: boolean) => {
    fds.push(fd);
    args.push(readOnly ? '--ro-bind-fd' : '--bind-fd', String(FIRST_MOUNT_FD + fds.length - 1), dest);
  };
  try {
    const root = pinWorkspace(spec.workspace);
    const { uid, gid } = fstatSync(root);
    const readOnly = spec.sandbox.level === 'read-only';
    bind(root, spec.workspace, readOnly);
    // After the workspace: this mount lies over it. A mount point cannot be renamed or
    // removed, so `.keel/` cannot be swapped for a directory of the command's making.
    bind(pinKeelDir(root, KEEL_DIR), path.join(spec.workspace, KEEL_DIR), true);
    for (const mount of await findProtectedPaths(fdPath(root), spec.workspace)) {
      const dest = path.join(spec.workspace, mount.rel);
      switch (mount.kind) {
        case 'nested-root':
          bind(openMountSource(root, mount.rel, true), dest, readOnly);
          break;
        case 'read-only':
          bind(openMountSource(root, mount.rel, false), dest, true);
          break;
        case 'hide':
          args.push('--tmpfs', dest, '--remount-ro', dest);
          break;
        default: {
          const never: never = mount;
          throw new Error(`unknown mount ${JSON.stringify(never)}`);
        }
      }
    }
    return { fds, args, owner: { uid, gid }, close };
  } catch (error) {
    close();
    throw error;
  }
}

/** A protected path's descriptor, never through a symlink; one that changed since the walk refuses the start. */
function openMountSource(root: number, rel: string, directory: boolean): number {
  try {
    return openBeneath(root, rel, directory);
  } catch (error) {
    throw new ToolError(`${rel} changed while the sandbox was being prepared (${(error as NodeJS.ErrnoException).code ?? String(error)}); the command did not run, try again`);
  }
}

/**
 * Whom a sandbox runs as on the host, when that is not the worker's own user: a worker
 * running as root runs each sandbox as the owner of its workspace (when that is not root),
 * so that root's files are not the command's and what it writes belongs to the workspace's
 * owner. A workspace owned by root leaves the sandbox host uid 0 without capabilities
 * (the start-up line and the README say so). Undefined: the worker's own uid.
 */
export function sandboxIdentity(owner: { uid: number; gid: number }): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0 || owner.uid === 0) return undefined;
  return owner;
}

/** The bwrap arguments that confine one command, up to and including `--`. */
export function bwrapArgs(spec: SandboxSpec, mounts: PreparedMounts): string[] {
  // Its own user namespace even as root: without it, bubblewrap run by root leaves the
  // command uid 0 of the host with (nearly) every capability.
  const args = ['--unshare-user', '--cap-drop', 'ALL', '--die-with-parent', '--new-session'];
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net');
  args.push('--seccomp', String(SECCOMP_FD));
  for (const dir of SYSTEM_DIRS) if (existsSync(dir)) args.push('--ro-bind', dir, dir);
  for (const link of SYSTEM_LINKS) {
    const stats = lstatOrUndefined(link);
    if (stats?.isSymbolicLink()) args.push('--symlink', readlinkSync(link), link);
    else if (stats?.isDirectory()) args.push('--ro-bind', link, link);
  }
  for (const file of MASKED_FILES) if (existsSync(file)) args.push('--ro-bind', '/dev/null', file);
  const node = nodeBinary();
  if (spec.proxyDir && !SYSTEM_DIRS.some((dir) => node.startsWith(`${dir}/`))) args.push('--ro-bind', node, node);
  // /proc read-only as a whole: bubblewrap covers only some of it, and a worker running as
  // root leaves the sandbox uid 0 of the host, for whom /proc/sys/kernel/core_pattern (a
  // program the kernel runs as root on any crash) and /proc/sysrq-trigger are writable
  // without any capability.
  args.push('--dev', '/dev', '--proc', '/proc', '--remount-ro', '/proc', '--size', String(spec.limits.tmpBytes), '--tmpfs', '/tmp', '--dir', SANDBOX_HOME);
  if (spec.proxyDir) args.push('--ro-bind', spec.proxyDir, SANDBOX_PROXY_DIR);
  for (const extra of spec.extraRead ?? []) if (path.isAbsolute(extra)) args.push('--ro-bind-try', extra, extra);
  // The workspace, its `.keel/`, every .git and nested .keel/ (machines/protected-paths.ts), from their descriptors.
  args.push(...mounts.args);
  args.push('--setenv', 'HOME', SANDBOX_HOME, '--chdir', spec.cwd, '--');
  return args;
}

/** Makes sure `.keel/` exists as a real directory, so that it can be mounted read-only; never through a symlink. */
// Async so that a refusal rejects the promise its callers await, rather than throw at the call.
export async function ensureKeelDir(workspace: string): Promise<void> {
  const root = pinWorkspace(workspace);
  try {
    closeSync(pinKeelDir(root, KEEL_DIR));
  } finally {
    closeSync(root);
  }
}

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}


const resolved = new Map<string, string>();
/** A program found on the worker's PATH once (the command's environment may have another PATH). */
function programPath(name: string): string {
  const known = resolved.get(name);
  if (known) return known;
  for (const dir of (workerPath() ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir, name);
    if (path.isAbsolute(candidate) && existsSync(candidate)) {
      resolved.set(name, candidate);
      return candidate;
    }
  }
  return name;
}

function bwrapPath(): string {
  return programPath(BWRAP);
}

/** The worker's own node, which runs the proxy forwarder inside the sandbox. */
function nodeBinary(): string {
  try {
    return realpathSync(process.execPath);
  } catch {
    return process.execPath;
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Where the forwarder says it listens; a FIFO in the sandbox's private /tmp. */
const FORWARDER_READY = '/tmp/.keel-proxy-ready';

/** Inside the sandbox: listens on the sandbox's own loopback and passes each connection to Keel's proxy socket. */
const FORWARDER = [
  `const net=require('net'),fs=require('fs');`,
  `net.createServer(c=>{const u=net.connect(${JSON.stringify(SANDBOX_PROXY_SOCKET)});c.pipe(u);u.pipe(c);`,
  `c.on('error',()=>u.destroy());u.on('error',()=>c.destroy())})`,
  `.listen(${SANDBOX_PROXY_PORT},'127.0.0.1',()=>fs.writeFileSync(${JSON.stringify(FORWARDER_READY)},'ready\\n'))`,
].join('');

/**
 * The shell that runs first inside the sandbox: it checks what the sandbox holds, says so
 * on the verdict descriptor, closes it, starts the proxy forwarder when the network is
 * granted, and replaces itself with prlimit and the command. When a check fails it writes
 * one line naming what is missing and exits with SELF_CHECK_FAILED; the command never runs.
 */
export function selfCheckScript(spec: Pick<SandboxSpec, 'limits' | 'proxyDir'>): string {
  const lines = [
    `fail() { printf '%s\\n' "$1" >&${VERDICT_FD}; exit ${SELF_CHECK_FAILED}; }`,
    `n=0; map=; count=`,
    `while read -r inner outer size; do n=$((n+1)); map="$inner $outer $size"; count=$size; done < /proc/self/uid_map`,
    `[ "$n" = 1 ] && [ "$count" = 1 ] || fail "own user namespace: the uid map is '$map' ($n lines), not a single id"`,
    `caps=0; nnp=; sec=`,
    `while read -r key value; do case "$key" in`,
    `  CapEff:|CapPrm:|CapBnd:|CapAmb:) [ "$value" = 0000000000000000 ] || fail "no capabilities: $key is $value"; caps=$((caps+1));;`,
    `  NoNewPrivs:) nnp=$value;; Seccomp:) sec=$value;;`,
    `esac; done < /proc/self/status`,
    `[ "$caps" = 4 ] || fail "no capabilities: /proc/self/status does not show them"`,
    `[ "$nnp" = 1 ] || fail "no_new_privs is not set"`,
    `[ "$sec" = 2 ] || fail "seccomp filter: not installed (Seccomp: \${sec:-absent})"`,
    `command -v unshare >/dev/null 2>&1 || fail "the self-check needs unshare (Debian package util-linux)"`,
    `command -v prlimit >/dev/null 2>&1 || fail "limits need prlimit (Debian package util-linux)"`,
    `if unshare -U true 2>/dev/null; then fail "seccomp filter: unshare(CLONE_NEWUSER) is not refused"; fi`,
    // access(W_OK) only: nothing is written, whatever the answer.
    `for f in /proc/sys/kernel/core_pattern /proc/sysrq-trigger; do if [ -w "$f" ]; then fail "read-only /proc: $f is writable"; fi; done`,
  ];
  if (spec.proxyDir) {
    lines.push(
      `[ -S ${SANDBOX_PROXY_SOCKET} ] || fail "network: Keel's proxy socket is not in the sandbox"`,
      `mkfifo ${FORWARDER_READY} || fail "network: cannot make the forwarder's FIFO"`,
      // If node cannot start, the subshell says so on the FIFO instead; either way the read returns.
      // The forwarder lives as long as the sandbox, so it must not hold the verdict descriptor:
      // the host reads the verdict to its end, and a long-lived server (MCP) would never get there.
      `( ${shellQuote(nodeBinary())} -e ${shellQuote(FORWARDER)} </dev/null >/dev/null 2>&1; echo failed > ${FORWARDER_READY} ) ${VERDICT_FD}>&- &`,
      `read -r ready < ${FORWARDER_READY}; rm -f ${FORWARDER_READY}`,
      `[ "$ready" = ready ] || fail "network: the proxy forwarder did not start"`,
    );
  }
  lines.push(
    `printf 'verified %s\\n' "$map" >&${VERDICT_FD}`,
    `exec ${VERDICT_FD}>&-`,
    `exec prlimit ${limitArgs(spec.limits).join(' ')} -- "$@"`,
  );
  return lines.join('\n');
}

/** What the self-check found: the uid map it verified, or the one thing missing. */
export type SandboxVerdict = { ok: true; uidMap: string } | { ok: false; reason: string };

export interface SandboxedProcess {
  child: ChildProcess;
  /** Settles once the check has spoken (before the command runs) or the sandbox failed to start. */
  verdict: Promise<SandboxVerdict>;
}

export interface SpawnSandboxedOptions {
  env: Record<string, string>;
  /** 'pipe' for a server that speaks on stdin (MCP); commands get no stdin. */
  stdin: 'pipe' | 'ignore';
  /** Its own process group, so that a timeout can kill everything it started. */
  detached: boolean;
  program?: string;
  /** cgroup.procs files bubblewrap joins before it starts (command-cgroup.ts): one per hierarchy. */
  cgroupProcs?: readonly string[];
  /** The workspace's mounts (prepareMounts); consumed: closed here once the child holds them. */
  mounts: PreparedMounts;
}

/** Starts `command` (argv) in the sandbox `spec` describes. */
export function spawnSandboxed(spec: SandboxSpec, command: readonly string[], options: SpawnSandboxedOptions): SandboxedProcess {
  const arch = currentSeccompArch();
  const bwrap = options.program ?? BWRAP;
  let program = bwrap;
  let args = [...bwrapArgs(spec, options.mounts), '/bin/sh', '-c', selfCheckScript(spec), 'keel-sandbox', ...command];
  const identity = sandboxIdentity(options.mounts.owner);
  if (identity) {
    // bubblewrap itself runs as the workspace's owner: the user namespace it makes maps that
    // unprivileged uid, so nothing in the sandbox is root's on the host.
    args = [`--reuid=${identity.uid}`, `--regid=${identity.gid}`, '--clear-groups', '--inh-caps=-all', '--', program === BWRAP ? bwrapPath() : program, ...args];
    program = programPath('setpriv');
  }
  if (options.cgroupProcs?.length) {
    // Joins the cgroup first, so that every process the sandbox ever has is counted.
    const n = options.cgroupProcs.length;
    const join = options.cgroupProcs.map((_, i) => `echo $$ > "$${i + 1}"`).join(' && ');
    args = ['-c', `${join} && shift ${n} && exec "$@"`, 'keel-cgroup', ...options.cgroupProcs, program === BWRAP ? bwrap : program, ...args];
    program = '/bin/sh';
  }
  let child: ChildProcess;
  try {
    child = spawn(program === BWRAP ? bwrapPath() : program, args, {
      // Not the workspace: a cwd is a path, looked up again. --chdir sets the directory inside.
      cwd: '/',
      env: options.env,
      detached: options.detached,
      stdio: [options.stdin, 'pipe', 'pipe', 'pipe', 'pipe', ...options.mounts.fds],
    });
  } finally {
    options.mounts.close();
  }
  const filterPipe = child.stdio[SECCOMP_FD] as NodeJS.WritableStream & { on(event: 'error', listener: () => void): void };
  filterPipe.on('error', () => undefined);
  // Without a filter for this architecture bubblewrap gets an empty one and refuses to start.
  filterPipe.end(arch ? seccompFilter(arch) : Buffer.alloc(0));
  const verdictPipe = child.stdio[VERDICT_FD] as NodeJS.ReadableStream & { on(event: 'error', listener: () => void): void };
  const verdict = new Promise<SandboxVerdict>((resolve) => {
    let text = '';
    const judge = (line: string) => {
      if (line.startsWith('verified ')) resolve({ ok: true, uidMap: line.slice('verified '.length) });
      else if (line) resolve({ ok: false, reason: line });
      else if (!arch) resolve({ ok: false, reason: `seccomp filter: no filter for the architecture ${process.arch}` });
      else resolve({ ok: false, reason: 'bubblewrap did not start the sandbox' });
    };
    verdictPipe.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      // The check speaks one line and is done: its verdict holds from the first newline, whoever
      // else might still hold the descriptor open.
      const end = text.indexOf('\n');
      if (end >= 0) judge(text.slice(0, end).trim());
    });
    verdictPipe.on('error', () => undefined);
    verdictPipe.on('end', () => judge(text.trim().split('\n')[0] ?? ''));
    child.once('error', (error) => resolve({ ok: false, reason: `${options.program ?? BWRAP} cannot be started (${error.message}); install the Debian package bubblewrap` }));
  });
  return { child, verdict };
}

export type SandboxProbe = { ok: true; verified: string } | { ok: false; reason: string };

let probe: Promise<SandboxProbe> | undefined;

/**
 * What the sandbox really holds here, checked once per process by starting one with the
 * same namespaces, filter and check a real command gets, and trying from inside what the
 * filter must refuse (mount, a new user namespace). Every call checks again (spawnSandboxed).
 */
export function probeSandbox(): Promise<SandboxProbe> {
  probe ??= runProbe(BWRAP);
  return probe;
}

export async function runProbe(program: string): Promise<SandboxProbe> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-sandbox-probe-'));
  try {
    const real = await fs.realpath(dir);
    const spec: SandboxSpec = { sandbox: { level: 'workspace-write', network: false }, workspace: real, cwd: real, limits: DEFAULT_PROBE_LIMITS };
    const attempts = `mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED; cat /proc/self/uid_map`;
    const mounts = await prepareMounts(spec);
    const { child, verdict } = spawnSandboxed(spec, ['/bin/sh', '-c', attempts], { env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' }, stdin: 'ignore', detached: false, program, mounts });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => {
      child.once('error', () => resolve(null));
      child.once('close', (exit) => resolve(exit));
    });
    const checked = await verdict;
    if (!checked.ok) {
      const detail = checked.reason === 'bubblewrap did not start the sandbox' ? `${checked.reason}: ${output.trim().split('\n')[0] ?? ''} — user namespaces are probably not allowed here` : checked.reason;
      return { ok: false, reason: detail };
    }
    if (output.includes('MOUNTED')) return { ok: false, reason: 'seccomp filter: mount is not refused' };
    if (code !== 0) return { ok: false, reason: `the probe command failed in the sandbox (exit ${code}): ${output.trim().split('\n')[0] ?? ''}` };
    const processLimit = (await pidsHeld()) ? 'a process limit (see the command limits line)' : 'NO process limit (the worker is root, for whom RLIMIT_NPROC does not hold, and no pids cgroup is writable)';
    return {
      ok: true,
      verified: `own user namespace (uid map "${checked.uidMap}"), no capabilities (CapEff 0), no_new_privs, seccomp filter (mount and unshare refused), read-only /proc, ${processLimit}`,
    };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

const DEFAULT_PROBE_LIMITS: SandboxLimits = { memoryBytes: 1024 * 1024 * 1024, processes: 64, cpuSeconds: 10, fileBytes: 1024 * 1024, tmpBytes: 1024 * 1024, openFiles: 256, diskBytes: 1024 * 1024 };

/** The one line a worker prints at start about its sandbox: what was verified, or what is missing. */
export function sandboxStartupLine(result: SandboxProbe): string {
  return result.ok
    ? `sandbox: verified ${result.verified}; run_command and MCP servers run confined to the workspace (policy "sandbox" chooses the level)`
    : `sandbox: UNAVAILABLE — ${result.reason}. Sandboxed tools are refused unless the policy sets "sandbox": "off"`;
}

/** Extra read-only paths from the operator: KEEL_SANDBOX_READ=/root/.pyenv:/opt/tools. */
export function extraReadPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  return (keelEnv(env, 'KEEL_SANDBOX_READ') ?? '').split(':').filter((p) => p !== '' && path.isAbsolute(p));
}

/** The worker's own PATH (where its programs are found; never a command's). */
function workerPath(): string | undefined {
  const { PATH } = process.env;
  return PATH;
}
