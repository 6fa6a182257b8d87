// run_command: one command in the workspace, as an argv array (no shell) or a shell
// string (/bin/sh -c). It runs in its own process group so that on timeout or cancel
// the whole group — the shell and everything it started — is killed. Output of stdout
// and stderr is combined in arrival order; progress goes out as heartbeats.
import { spawn, type ChildProcess } from 'node:child_process';
import { type Readable } from 'node:stream';
import { describeConnections, openNetworkGrant } from './network-grant';
import { makeCommandCgroup } from './command-cgroup';
import { watchCommand, type CommandWatch } from './command-watch';
import { saveArtifact, artifactPath, truncateForModel } from './artifacts';
import { DEFAULT_SANDBOX, type ToolContext } from './context';
import { type ToolFacts, type ToolResult, toolRefused } from './result';
import { newRunToken, recordRunning, reapOrphanedCommands, RUN_TOKEN_ENV } from './orphans';
import { hit, limitHit, limitInOutput, resolveLimits, type LimitHit } from './limits';
import { prepareMounts, probeSandbox, sandboxIdentity, spawnSandboxed, type PreparedMounts, type SandboxVerdict } from './sandbox';
import { openExisting, ToolError } from './workspace';
import { hashScripts } from './script-hash';
import { changedScripts, describeScriptChanges } from '../../machines/script-binding';
import { type RunCommandInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { runCommandInput, type RunCommandInput, RUN_COMMAND_DESCRIPTION, MAX_COMMAND_TIMEOUT_SECONDS } from '../../machines/builtin-tools';

export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 120;
/** Output kept for the artifact; beyond this only the count of bytes is kept. */
const MAX_RETAINED_BYTES = 64 * 1024 * 1024;
const PROGRESS_EVERY_MS = 500;
const PROGRESS_TAIL_BYTES = 1024;
/** Time between SIGTERM and SIGKILL for the group. */
const KILL_GRACE_MS = 500;
/** How long to wait for pipes to close after the main process has exited. */
const DRAIN_MS = 1000;

export interface CommandProgress {
  tool: 'run_command';
  pid: number | undefined;
  bytes: number;
  /** Complete output lines so far. */
  lines: number;
  tail: string;
}

type Ending =
  | { type: 'exited'; code: number | null; signal: NodeJS.Signals | null }
  | { type: 'timed_out'; seconds: number }
  | { type: 'cancelled' }
  | { type: 'spawn_failed'; message: string };

export async function runCommand(ctx: ToolContext, input: RunCommandInput): Promise<ToolResult> {
  await reapOrphanedCommands(ctx.ws);
  const cwd = await openExisting(ctx.ws, input.cwd ?? '.', 'directory');
  const cwdPath = cwd.real.toString();
  await cwd.handle.close();

  const timeoutSeconds = input.timeout_seconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS;
  const [commandFile, commandArgs, display] = Array.isArray(input.command)
    ? [input.command[0] ?? '', input.command.slice(1), input.command.map(quoteArg).join(' ')]
    : ['/bin/sh', ['-c', input.command], input.command];

  // The workspace files it runs, hashed now: an approval bound to them holds only while they say what was approved.
  const scripts = await hashScripts(ctx.ws, cwdPath, input.command);
  if (ctx.boundScripts) {
    const changes = changedScripts(ctx.boundScripts, scripts.hashes, scripts.runs);
    if (changes.length) return toolRefused('run_command', 'script_changed', describeScriptChanges(changes));
  }

  const sandbox = ctx.sandbox ?? DEFAULT_SANDBOX;
  const limits = resolveLimits(sandbox.limits);
  if (sandbox.level !== 'off') {
    const probe = ctx.sandboxProbe ?? (await probeSandbox());
    if (!probe.ok) {
      // Never a silent fallback to running unconfined.
      return toolRefused('run_command', 'sandbox_unavailable', `commands cannot run: the sandbox is unavailable on this worker (${probe.reason}); the policy would have to set "sandbox": "off" to run them unconfined`);
    }
  }

  const env: Record<string, string> = {};
  for (const name of ctx.envAllowList) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  // Marks the process group as Keel's own: a record naming any other process is never acted on.
  const token = newRunToken();
  env[RUN_TOKEN_ENV] = token;

  const chunks: Buffer[] = [];
  let retained = 0;
  let total = 0;
  let lines = 0;
  let tail = Buffer.alloc(0);

  // The workspace opened once, by descriptor, before anything else is set up for the sandbox.
  const mounts: PreparedMounts | undefined = sandbox.level !== 'off' ? await prepareMounts({ workspace: ctx.ws.root, sandbox }) : undefined;
  let network: Awaited<ReturnType<typeof openNetworkGrant>> | undefined;
  let cgroup: Awaited<ReturnType<typeof makeCommandCgroup>>;
  try {
    const sandboxUser = mounts ? sandboxIdentity(mounts.owner) : undefined;
    network = sandbox.level !== 'off' && sandbox.network ? await openNetworkGrant(ctx, sandbox, undefined, sandboxUser) : undefined;
    // The command tree's own cgroup (memory, processes, CPU weight), where this worker may make one.
    cgroup = sandbox.level !== 'off' ? await makeCommandCgroup(limits) : undefined;
  } catch (error) {
    mounts?.close();
    await network?.close();
    throw error;
  }
  let verdict: Promise<SandboxVerdict> | undefined;
  let child: ChildProcess;
  if (sandbox.level === 'off' || !mounts) child = spawn(commandFile, commandArgs, { cwd: cwdPath, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  else {
    if (network) Object.assign(env, network.env);
    const started = spawnSandboxed(
      { sandbox, workspace: ctx.ws.root, cwd: cwdPath, extraRead: ctx.sandboxRead, limits, ...(network ? { proxyDir: network.dir } : {}) },
      [commandFile, ...commandArgs],
      { env, stdin: 'ignore', detached: true, mounts, ...(cgroup ? { cgroupProcs: cgroup.procs } : {}) },
    );
    child = started.child;
    verdict = started.verdict;
  }
  const stdout = child.stdout as Readable;
  const stderr = child.stderr as Readable;
  const pid = child.pid;
  // memoryBytes holds for the tree together: by the cgroup, or the watcher's sum where there is none.
  if (sandbox.level !== 'off') limits.treeMemory = true;
  // The disk budget, and the tree's memory where no cgroup limits it: watched while it runs.
  let watch: CommandWatch | undefined;
  const watching =
    sandbox.level !== 'off' && pid !== undefined
      ? watchCommand({
          rootPid: pid,
          workspace: ctx.ws.root,
          memoryBytes: limits.memoryBytes,
          diskBytes: limits.diskBytes,
          cgroup,
          onLimit: (kind) => {
            limitSeen ??= hit(limits, kind);
            stopGroup();
            void cgroup?.kill();
          },
        }).then((w) => (watch = w), () => undefined)
      : undefined;
  // Not awaited here: the exit and data listeners must be attached in this same tick.
  // A command whose record cannot be written (say, .keel/ replaced by a file) still runs.
  const noRecord = async () => undefined;
  const recorded =
    pid === undefined ? Promise.resolve(noRecord) : recordRunning(ctx.ws, ctx.callKey, pid, display, token).catch(() => noRecord);
  const onData = (chunk: Buffer) => {
    total += chunk.length;
    for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) lines += 1;
    if (retained + chunk.length <= MAX_RETAINED_BYTES) {
      chunks.push(chunk);
      retained += chunk.length;
    }
    tail = Buffer.concat([tail, chunk]).subarray(-PROGRESS_TAIL_BYTES);
    // A fork bomb at its process limit never ends by itself: the first sign of it ends the call.
    if (sandbox.level !== 'off' && !limitSeen) {
      const seen = limitInOutput(limits, tail.toString('utf8'));
      if (seen?.kind === 'processes') {
        limitSeen = seen;
        stopGroup();
      }
    }
  };
  let limitSeen: LimitHit | undefined;
  stdout.on('data', onData);
  stderr.on('data', onData);

  const killGroup = (signal: NodeJS.Signals) => {
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  };

  const reportProgress = () => {
    const progress: CommandProgress = { tool: 'run_command', pid, bytes: total, lines, tail: tail.toString('utf8') };
    ctx.progress(progress);
  };
  reportProgress();
  const progressTimer = setInterval(reportProgress, PROGRESS_EVERY_MS);

  let killTimer: NodeJS.Timeout | undefined;
  const stopGroup = () => {
    killGroup('SIGTERM');
    killTimer ??= setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
  };

  const ending = await new Promise<Ending>((resolve) => {
    let settled: Ending | undefined;
    const settle = (value: Ending) => {
      settled ??= value;
    };
    const timeout = setTimeout(() => {
      settle({ type: 'timed_out', seconds: timeoutSeconds });
      stopGroup();
    }, timeoutSeconds * 1000);
    const onAbort = () => {
      settle({ type: 'cancelled' });
      stopGroup();
    };
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort, { once: true });

    child.once('error', (error) => {
      clearTimeout(timeout);
      ctx.signal.removeEventListener('abort', onAbort);
      settle({ type: 'spawn_failed', message: error.message });
      resolve(settled ?? { type: 'spawn_failed', message: error.message });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timeout);
      ctx.signal.removeEventListener('abort', onAbort);
      // Whatever the command left running in its group goes with it: a command's
      // background children must not outlive the tool call.
      killGroup('SIGKILL');
      settle({ type: 'exited', code, signal });
      const drained = setTimeout(() => {
        stdout.destroy();
        stderr.destroy();
      }, DRAIN_MS);
      const finish = () => {
        clearTimeout(drained);
        resolve(settled ?? { type: 'exited', code, signal });
      };
      if (stdout.closed && stderr.closed) finish();
      else child.once('close', finish);
    });
  });
  clearInterval(progressTimer);
  if (killTimer) clearTimeout(killTimer);
  killGroup('SIGKILL');
  await watching;
  const watched = await watch?.stop();
  if (watched) limitSeen ??= hit(limits, watched);
  await (await recorded)();
  await network?.close();
  // Everything in the command's cgroup is killed now; removing the emptied cgroup waits on the
  // kernel's reaping (~15 ms for a memory cgroup) and need not hold the result back.
  await cgroup?.kill();
  void cgroup?.close();
  reportProgress();

  const output = Buffer.concat(chunks);
  const checked = await verdict;
  if (checked && !checked.ok) {
    // The check runs before the command: a sandbox that fails it never ran anything.
    throw new ToolError(`commands cannot run: the sandbox self-check failed (${checked.reason}); the command did not run`);
  }
  const limit = sandbox.level === 'off' ? undefined : (limitSeen ?? (ending.type === 'exited' ? limitHit(limits, ending, output.subarray(-64 * 1024).toString('utf8')) : undefined));
  const status = limit ? `limit: ${limit.message}; the command and all processes it started were stopped` : describeEnding(ending);
  const isError = limit !== undefined || !(ending.type === 'exited' && ending.code === 0);
  const where = input.cwd && input.cwd !== '.' ? `   (in ${cwd.rel})` : '';
  const header = `$ ${display}${where}${sandbox.level === 'off' ? '   [sandbox off]' : ''}\n`;
  const netLine = network && network.connections.length ? `\n[network: ${describeConnections(network.connections)}]` : '';
  const footer = `${netLine}\n[${status}]`;
  // The exit code as data: nothing downstream reads it back out of the footer.
  const facts: ToolFacts = {
    kind: 'command',
    command: display.length > 20_000 ? `${display.slice(0, 20_000 - 1)}…` : display,
    exitCode: ending.type === 'exited' && ending.signal === null ? ending.code : null,
    timedOut: ending.type === 'timed_out',
    ...(limit ? { limit: limit.kind } : {}),
    ...(Object.keys(scripts.hashes).length ? { scripts: scripts.hashes } : {}),
    bytes: total,
    lines: lines + (tail.length > 0 && tail[tail.length - 1] !== 0x0a ? 1 : 0),
  };
  if (total <= ctx.outputCapBytes) {
    const text = output.toString('utf8');
    const body = text.length && !text.endsWith('\n') ? `${text}\n` : text;
    return { content: header + body + footer.trimStart(), is_error: isError, ...timedOut(ending), facts };
  }
  const artifactRel = await saveArtifact(ctx.ws, artifactPath(ctx.callKey, 'run_command'), output);
  const room = Math.max(1024, ctx.outputCapBytes - Buffer.byteLength(header + footer) - 400);
  const truncated = truncateForModel(output, room, artifactRel, total);
  const lost = total > retained ? `\n[only the first ${retained} of ${total} bytes were kept in the artifact]` : '';
  return { ...truncated, content: header + truncated.content + lost + footer, is_error: isError, ...timedOut(ending), facts };
}

/** A command killed at its own timeout ends as `timed_out`, not as a plain error. */
function timedOut(ending: Ending): { timed_out?: true } {
  return ending.type === 'timed_out' ? { timed_out: true } : {};
}

function describeEnding(ending: Ending): string {
  switch (ending.type) {
    case 'exited':
      return ending.signal ? `killed by ${ending.signal}` : `exit code ${ending.code ?? 'unknown'}`;
    case 'timed_out':
      return `timed out after ${ending.seconds} s; the command and all processes it started were killed`;
    case 'cancelled':
      return 'cancelled; the command and all processes it started were killed';
    case 'spawn_failed':
      return `could not start: ${ending.message}`;
    default: {
      const never: never = ending;
      throw new Error(`unknown ending ${JSON.stringify(never)}`);
    }
  }
}

function quoteArg(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
