// The MCP bridge against our own MCP server over real stdio: tools listed once as
// mcp__<server>__<tool>, calls with heartbeats on progress, isError as a tool error,
// timeouts, cancellation, one server process kept alive, restarted after it exits —
// and a call through a real worker.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpBridge, type McpBridge, type McpToolList, parseMcpConfig, parseMcpToolName } from '../../activities/mcp/index';
import { ACTIVITY_WORKER_OPTIONS, type ToolResult } from '../../activities/tools/index';
import { callMcpToolWorkflow } from '../fixtures/tools-workflow';
import { uniqueTaskQueue, WORKFLOWS_ON_CALLING_THREAD } from '../helpers/temporal';
import { matching } from '../unit/tools/context';
import { useTemporal } from '../fixtures/use-temporal';
import { compiledWorker } from '../fixtures/compiled-cli';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
/** test/fixtures/mcp-server.ts, compiled for the run. */
const [node, serverScript] = await compiledWorker('mcp-server');
/** The server runs sandboxed: it may read the repository (its code), nothing else outside the workspace. */
const sandbox = { read: [repoRoot] };

const config = parseMcpConfig({
  servers: {
    test: { command: node, args: [serverScript], sandbox, callTimeoutMs: 10_000 },
    hasty: { command: node, args: [serverScript], sandbox, callTimeoutMs: 300 },
    missing: { command: '/nonexistent/keel-mcp-server', startupTimeoutMs: 5_000 },
  },
});

let bridge: McpBridge;
let workspace: string;

beforeAll(async () => {
  bridge = createMcpBridge(config, { outputCapBytes: 2_000 });
  workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-')));
});

afterAll(async () => {
  await bridge?.close();
  if (workspace) await fs.rm(workspace, { recursive: true, force: true });
});

function call(tool: string, input: unknown, mock = new MockActivityEnvironment()): Promise<ToolResult> {
  return mock.run<[], ToolResult, () => Promise<ToolResult>>(() => bridge.activities.callMcpTool({ tool, input, workspace }));
}

function callIn(dir: string, tool: string, input: unknown): Promise<ToolResult> {
  return new MockActivityEnvironment().run<[], ToolResult, () => Promise<ToolResult>>(() => bridge.activities.callMcpTool({ tool, input, workspace: dir }));
}

function listTools(): Promise<McpToolList> {
  return new MockActivityEnvironment().run<[], McpToolList, () => Promise<McpToolList>>(() => bridge.activities.listMcpTools());
}

describe('MCP bridge over real stdio', () => {
  it('lists the tools of every server as mcp__<server>__<tool>, and reports a server that cannot start', async () => {
    const list = await listTools();
    const names = list.tools.map((tool) => tool.spec.name).sort();
    expect(names).toEqual(expect.arrayContaining(['mcp__test__echo', 'mcp__test__fail', 'mcp__test__slow', 'mcp__hasty__echo']));
    const echo = list.tools.find((tool) => tool.spec.name === 'mcp__test__echo');
    expect(echo).toMatchObject({
      server: 'test',
      kind: 'mcp',
      readOnly: true,
      spec: { description: '[MCP server test] Echoes its text.', input_schema: { type: 'object', properties: { text: { type: 'string' } } } },
      activityOptions: { startToCloseTimeout: 25_000, heartbeatTimeout: 10_000, retry: { maximumAttempts: 1 } },
    });
    expect(list.tools.find((tool) => tool.spec.name === 'mcp__test__fail')?.readOnly).toBe(false);
    expect(list.errors).toEqual([{ server: 'missing', message: matching(/^MCP server missing \(\/nonexistent\/keel-mcp-server\) may not start: its command \/nonexistent\/keel-mcp-server was not found/) }]);
  });

  it('calls a tool and keeps one server process alive across calls', async () => {
    expect(await call('mcp__test__echo', { text: 'hi' })).toEqual({ is_error: false, content: 'echo: hi' });
    const first = await call('mcp__test__pid', {});
    const second = await call('mcp__test__pid', {});
    expect(first.content).toMatch(/^\d+$/);
    expect(second.content).toBe(first.content);
    // The server runs in its own PID namespace: the worker knows bubblewrap's pid, not the server's.
    expect(await bridge.pool.pid('test', workspace)).toEqual(expect.any(Number));
  });

  it('leaves nothing in the temp directory once closed (the servers listed from a directory of their own)', async () => {
    const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-tmp-'));
    const own = createMcpBridge(parseMcpConfig({ servers: { test: config.servers.test! } }));
    const before = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const list = await new MockActivityEnvironment().run<[], McpToolList, () => Promise<McpToolList>>(() => own.activities.listMcpTools());
      expect(list.tools.map((tool) => tool.spec.name)).toContain('mcp__test__echo');
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
    expect(await fs.readdir(tmp)).toEqual([expect.stringMatching(/^keel-mcp-list-/)]);
    await own.close();
    expect(await fs.readdir(tmp)).toEqual([]);
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('restarts a server that exited on its next use', async () => {
    // In its own PID namespace every server is pid 2: the sandbox's host pid tells them apart.
    const hostPid = () => bridge.pool.pid('test', workspace);
    const before = await hostPid();
    expect((await call('mcp__test__exit', {})).content).toBe('bye');
    let after = before;
    for (let i = 0; i < 50 && after === before; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await call('mcp__test__echo', { text: 'x' }).catch(() => undefined);
      after = await hostPid().catch(() => before);
    }
    expect(after).toEqual(expect.any(Number));
    expect(after).not.toBe(before);
  });

  it("gives each workspace its own server, whose only root is that workspace", async () => {
    const other = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-other-')));
    try {
      const mine = JSON.parse((await call('mcp__test__roots', {})).content) as { roots: string[]; cwd: string };
      const theirs = JSON.parse((await callIn(other, 'mcp__test__roots', {})).content) as { roots: string[]; cwd: string };
      expect(mine).toEqual({ roots: [`file://${workspace}`], cwd: workspace });
      expect(theirs.roots).toEqual([`file://${other}`]);
      expect(await bridge.pool.pid('test', workspace)).not.toBe(await bridge.pool.pid('test', other));
    } finally {
      await fs.rm(other, { recursive: true, force: true });
    }
  });

  it('refuses file arguments outside the workspace or in .keel/, through any route, before the server sees them', async () => {
    const outside = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-outside-')));
    try {
      await fs.mkdir(path.join(workspace, '.keel'), { recursive: true });
      await fs.symlink(outside, path.join(workspace, 'out'));
      await fs.symlink('.keel', path.join(workspace, 'cfg'));
      await fs.symlink(path.join(outside, 'new.txt'), path.join(workspace, 'dangling'));
      for (const target of [
        path.join(outside, 'x.txt'),
        '../x.txt',
        path.join(workspace, '../x.txt'),
        path.join(workspace, 'out/x.txt'),
        'out/x.txt',
        path.join(workspace, '.keel/policy.json'),
        path.join(workspace, 'cfg/policy.json'),
        'dangling',
        `file://${outside}/x.txt`,
      ]) {
        const result = await call('mcp__test__write', { path: target, text: 'escaped' });
        expect(result, target).toMatchObject({ is_error: true, content: matching(/outside the workspace|holds Keel's own state/) });
      }
      expect(await fs.readdir(outside)).toEqual([]);
      expect(await fs.readdir(path.join(workspace, '.keel'))).not.toContain('policy.json');
      // Inside, it works.
      expect(await call('mcp__test__write', { path: path.join(workspace, 'ok.txt'), text: 'fine' })).toMatchObject({ is_error: false });
      expect(await fs.readFile(path.join(workspace, 'ok.txt'), 'utf8')).toBe('fine');
    } finally {
      await fs.rm(path.join(workspace, 'out'), { force: true });
      await fs.rm(path.join(workspace, 'cfg'), { force: true });
      await fs.rm(path.join(workspace, 'dangling'), { force: true });
      await fs.rm(outside, { recursive: true, force: true });
    }
  });

  it('turns isError, unknown tools, bad arguments and bad names into tool errors', async () => {
    expect(await call('mcp__test__fail', { why: 'on purpose' })).toEqual({ is_error: true, content: 'it broke: on purpose' });
    expect(await call('mcp__test__nope', {})).toMatchObject({ is_error: true, content: matching(/nope/) });
    expect(await call('mcp__test__echo', { text: 42 })).toMatchObject({ is_error: true, content: matching(/text/) });
    expect(await call('mcp__ghost__echo', {})).toEqual({ is_error: true, content: 'no MCP server named "ghost" is configured' });
    expect(await call('echo', {})).toMatchObject({ is_error: true, content: matching(/not an MCP tool name/) });
  });

  it('heartbeats on progress', async () => {
    const mock = new MockActivityEnvironment();
    const beats: unknown[] = [];
    mock.on('heartbeat', (details: unknown) => beats.push(details));
    expect(await call('mcp__test__slow', { steps: 3, delayMs: 50 }, mock)).toEqual({ is_error: false, content: 'done after 3 steps' });
    expect(beats).toEqual(expect.arrayContaining([{ tool: 'mcp__test__slow', progress: 1, total: 3, message: 'step 1' }]));
  });

  it('ends a call that outlives its timeout with a tool error', async () => {
    expect(await call('mcp__hasty__slow', { steps: 20, delayMs: 100 })).toEqual({ is_error: true, content: 'mcp__hasty__slow timed out after 300 ms' });
  });

  it('is cancelled when the activity is cancelled', async () => {
    const mock = new MockActivityEnvironment();
    const pending = call('mcp__test__slow', { steps: 100, delayMs: 50 }, mock);
    await new Promise((resolve) => setTimeout(resolve, 300));
    mock.cancel();
    await expect(pending).rejects.toBeInstanceOf(CancelledFailure);
    // The server is still there for the next call.
    expect((await call('mcp__test__echo', { text: 'still here' })).content).toBe('echo: still here');
  });

  it('truncates long output and saves it as an artifact; shows what it cannot render', async () => {
    const big = await call('mcp__test__big', { bytes: 10_000 });
    expect(big.truncated_bytes).toBeGreaterThan(7_000);
    expect(big.content).toMatch(/TAIL$/);
    expect((await fs.readFile(path.join(workspace, big.artifact ?? ''), 'utf8')).length).toBe(10_000);
    expect(await call('mcp__test__mixed', {})).toEqual({ is_error: false, content: 'a picture:\n[image image/png, 16 bytes, not shown]' });
  });
});

describe('MCP config and names', () => {
  it('rejects bad config with clear errors', () => {
    expect(() => parseMcpConfig({ servers: { a__b: { command: 'x' } } }, '.keel/mcp.json')).toThrow(
      'invalid .keel/mcp.json:\n  servers.a__b: server names may not contain "__" (it separates server and tool)',
    );
    expect(() => parseMcpConfig({ servers: { ok: { args: [] } } })).toThrow(
      'invalid MCP config:\n  servers.ok.command: Invalid input: expected string, received undefined',
    );
  });

  it('splits mcp__<server>__<tool>, tool names may contain __', () => {
    expect(parseMcpToolName('mcp__gh__create__issue')).toEqual({ server: 'gh', tool: 'create__issue' });
    expect(parseMcpToolName('mcp__gh')).toBeUndefined();
    expect(parseMcpToolName('read_file')).toBeUndefined();
  });
});

describe('MCP tool through a real worker', () => {
  const { env, workflowBundle } = useTemporal({ workflows: path.join(here, '../fixtures/tools-workflow.ts') });

  it('runs as an activity with the options the bridge listed', async () => {
    const taskQueue = uniqueTaskQueue('mcp');
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, ...WORKFLOWS_ON_CALLING_THREAD, activities: bridge.activities, ...ACTIVITY_WORKER_OPTIONS });
    const list = await listTools();
    const echo = list.tools.find((tool) => tool.spec.name === 'mcp__test__echo');
    if (!echo) throw new Error('echo not listed');
    const result = await worker.runUntil(
      env.client.workflow.execute(callMcpToolWorkflow, {
        taskQueue,
        workflowId: `mcp-${taskQueue}`,
        args: [{ tool: 'mcp__test__echo', input: { text: 'through temporal' }, workspace }, echo.activityOptions],
      }),
    );
    expect(result).toEqual({ is_error: false, content: 'echo: through temporal' });
  });
});
