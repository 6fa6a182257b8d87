// MCP servers in the command sandbox: what a planted package, a cwd outside, a relative
// write or a read outside come to, with a real server over real stdio (no Temporal).
import { chmodSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpBridge, parseMcpConfig, type McpBridge } from '../../activities/mcp/index';
import { planLaunch } from '../../activities/mcp/launch';
import { type ToolResult } from '../../activities/tools/result';
import { matching } from './tools/context';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tsx = pathToFileURL(path.join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
const serverScript = path.join(repoRoot, 'test/fixtures/mcp-server.ts');

let base: string;
let workspace: string;
let outside: string;
let bridge: McpBridge;

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-sandbox-')));
  workspace = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await fs.mkdir(workspace);
  await fs.mkdir(outside);
  await fs.writeFile(path.join(outside, 'secret.txt'), 'SECRET\n');
  // What the agent planted: a package npx would prefer, and a program on a PATH entry inside the workspace.
  const planted = path.join(workspace, 'node_modules/keel-planted-mcp');
  await fs.mkdir(path.join(planted, 'bin'), { recursive: true });
  await fs.writeFile(path.join(planted, 'package.json'), JSON.stringify({ name: 'keel-planted-mcp', version: '1.0.0', bin: { 'keel-planted-mcp': 'bin/x.js' } }));
  writeFileSync(path.join(planted, 'bin/x.js'), `#!/usr/bin/env node\nrequire('fs').writeFileSync(${JSON.stringify(path.join(workspace, 'PLANTED-RAN'))}, 'x')\n`, { mode: 0o755 });
  await fs.mkdir(path.join(workspace, 'node_modules/.bin'), { recursive: true });
  await fs.symlink('../keel-planted-mcp/bin/x.js', path.join(workspace, 'node_modules/.bin/keel-planted-mcp'));
  await fs.writeFile(path.join(workspace, 'package.json'), '{"name":"ws","version":"1.0.0"}');
  await fs.mkdir(path.join(workspace, 'bin'));
  writeFileSync(path.join(workspace, 'bin/keel-evil-server'), '#!/bin/sh\ntouch PLANTED-RAN\n', { mode: 0o755 });
  chmodSync(workspace, 0o755);
  bridge = createMcpBridge(
    parseMcpConfig({
      servers: {
        fs: { command: process.execPath, args: ['--import', tsx, serverScript], sandbox: { read: [repoRoot] } },
        planted: { command: 'npx', args: ['-y', 'keel-planted-mcp'], startupTimeoutMs: 5_000 },
      },
    }),
  );
});
afterAll(async () => {
  await bridge?.close();
  await fs.rm(base, { recursive: true, force: true });
});

const call = (tool: string, input: unknown): Promise<ToolResult> =>
  new MockActivityEnvironment().run<[], ToolResult, () => Promise<ToolResult>>(() => bridge.activities.callMcpTool({ tool, input, workspace }));

describe('MCP servers in the sandbox', { timeout: 60_000 }, () => {
  it('run with the workspace as cwd, in their own namespaces: a relative write lands in the workspace', async () => {
    const roots = JSON.parse((await call('mcp__fs__roots', {})).content) as { cwd: string };
    expect(roots.cwd).toBe(workspace);
    expect(await call('mcp__fs__write', { path: 'rel.txt', text: 'x' })).toMatchObject({ is_error: false });
    expect(await fs.readFile(path.join(workspace, 'rel.txt'), 'utf8')).toBe('x');
  });

  it('cannot read or write outside the workspace even when the bridge\'s path check is not in the way', async () => {
    // The bridge refuses outside paths it can see; a path the server computes itself meets the sandbox.
    const result = await new MockActivityEnvironment().run<[], ToolResult, () => Promise<ToolResult>>(() =>
      bridge.activities.callMcpTool({ tool: 'mcp__fs__write', input: { path: 'x/../../outside/new.txt', text: 'x' }, workspace }),
    );
    expect(result.is_error).toBe(true);
    expect(await fs.readdir(outside)).toEqual(['secret.txt']);
  });

  it('never runs a package the agent planted in the workspace (npx starts outside it)', async () => {
    const result = await call('mcp__planted__anything', {}).catch((error: Error) => ({ is_error: true, content: error.message }));
    expect(result.is_error).toBe(true);
    await expect(fs.stat(path.join(workspace, 'PLANTED-RAN'))).rejects.toThrow(/ENOENT/);
  });

  it('resolves the program outside the workspace and refuses a cwd outside it', () => {
    const config = (over: Record<string, unknown>) => parseMcpConfig({ servers: { s: { command: 'keel-evil-server', ...over } } }).servers.s!;
    expect(() => planLaunch(config({}), workspace, `${path.join(workspace, 'bin')}:/usr/bin:/bin`)).toThrow(/was not found on the worker's PATH/);
    expect(() => planLaunch(config({ command: path.join(workspace, 'bin/keel-evil-server') }), workspace)).toThrow(/inside the workspace; a server's program must come from outside it/);
    expect(() => planLaunch(config({ command: 'sh', cwd: outside }), workspace)).toThrow(/is outside the workspace/);
    expect(() => planLaunch(config({ command: 'sh', cwd: '..' }), workspace)).toThrow(/is outside the workspace/);
    expect(planLaunch(config({ command: 'sh', cwd: '${workspace}/bin' }), workspace)).toMatchObject({ executable: matching(/^\/(usr\/)?bin\/(da|ba)?sh$/), cwd: path.join(workspace, 'bin') });
    expect(planLaunch(config({ command: 'npx', args: ['-y', 'x', '${workspace}'] }), workspace)).toMatchObject({ cwd: '/tmp/home', args: ['-y', 'x', workspace] });
  });
});
