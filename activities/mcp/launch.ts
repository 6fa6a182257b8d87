// How an MCP server starts: in the same sandbox as commands (activities/tools/sandbox.ts),
// with the workspace bound as its `sandbox.level` says, its working directory inside the
// workspace, and its executable found OUTSIDE the workspace. The agent can write files in
// the workspace, so nothing there may choose what runs: the command is looked up on the
// worker's PATH with every directory inside the workspace skipped, and a command that
// resolves into the workspace is refused. `npx` (and `npm exec`) would still prefer a
// package in the working directory's node_modules, so they start in the sandbox's private
// home instead; such servers get the workspace through `${workspace}` in their arguments.
import { accessSync, constants, realpathSync } from 'node:fs';
import path from 'node:path';
import { type McpServerConfig } from './config';
import { SANDBOX_HOME } from '../tools/sandbox';

export interface LaunchPlan {
  /** Absolute, real path of the executable, outside the workspace. */
  executable: string;
  args: string[];
  env: Record<string, string>;
  /** Working directory inside the sandbox. */
  cwd: string;
}

const PACKAGE_RUNNERS = new Set(['npx', 'npm', 'pnpm', 'yarn', 'bunx', 'bun']);

export function isInsideDir(dir: string, target: string): boolean {
  const rel = path.relative(dir, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The server's executable, args, env and cwd for one workspace (a real path), or an error saying why it may not start. */
export function planLaunch(config: McpServerConfig, workspace: string, hostPath = workerPath() ?? ''): LaunchPlan {
  const fill = (text: string) => text.replaceAll('${workspace}', workspace);
  const executable = resolveExecutable(config.command, workspace, hostPath);
  const runner = PACKAGE_RUNNERS.has(path.basename(config.command)) || PACKAGE_RUNNERS.has(path.basename(executable).replace(/-cli\.js$/, ''));
  let cwd = workspace;
  if (config.cwd !== undefined) {
    const wanted = path.resolve(workspace, fill(config.cwd));
    let real: string;
    try {
      real = realpathSync(wanted);
    } catch {
      throw new Error(`its cwd ${wanted} does not exist`);
    }
    if (!isInsideDir(workspace, real)) throw new Error(`its cwd ${config.cwd} is outside the workspace; an MCP server works inside the workspace it serves`);
    cwd = real;
  }
  if (runner) cwd = SANDBOX_HOME;
  const env: Record<string, string> = { PATH: safePath(hostPath, workspace), HOME: SANDBOX_HOME };
  for (const [name, value] of Object.entries(config.env)) env[name] = fill(value);
  if (runner) env.npm_config_yes = 'true';
  return { executable, args: config.args.map(fill), env, cwd };
}

/** The worker's PATH without any directory inside the workspace (or relative ones, which would be). */
function safePath(hostPath: string, workspace: string): string {
  return hostPath
    .split(':')
    .filter((dir) => path.isAbsolute(dir) && !isInsideDir(workspace, realOr(dir)))
    .join(':');
}

function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function resolveExecutable(command: string, workspace: string, hostPath: string): string {
  const candidates = command.includes('/')
    ? [path.resolve(command)]
    : safePath(hostPath, workspace)
        .split(':')
        .map((dir) => path.join(dir, command));
  for (const candidate of candidates) {
    let real: string;
    try {
      real = realpathSync(candidate);
      accessSync(real, constants.X_OK);
    } catch {
      continue;
    }
    if (isInsideDir(workspace, real)) throw new Error(`its command ${command} resolves to ${real}, inside the workspace; a server's program must come from outside it`);
    return real;
  }
  throw new Error(`its command ${command} was not found${command.includes('/') ? '' : ' on the worker\'s PATH'}`);
}

/** The worker's own PATH (where its programs are found; never a command's). */
function workerPath(): string | undefined {
  const { PATH } = process.env;
  return PATH;
}
