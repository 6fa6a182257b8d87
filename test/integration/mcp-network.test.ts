// An MCP server granted the network, in the sandbox: it starts, serves calls and closes
// within bounds (it used to hang at start: the proxy forwarder inside the sandbox held the
// self-check's verdict descriptor open for the life of the server, so the verdict never
// ended), and every connection Keel's egress proxy allows or refuses for it while a call
// runs is a `tool.progress` event of that call, as a client subscribed to the session's
// stream sees it — through a real worker, dev server and stand-in.
//
// This machine has no outside DNS: the one granted name, granted.keel.test, resolves to a
// public address through a stand-in for the resolver (every other name resolves for real).
// The proxy's verdict is the point here, not whether the address answers.
import type * as dnsPromises from 'node:dns/promises';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMcpBridge, parseMcpConfig } from '../../activities/mcp/index';
import type { ConnectionRecord } from '../../activities/tools/network-proxy';
import { TOOL_STREAM_TOPIC, type ToolProgressEvent } from '../../activities/tools/progress';
import { probeSandbox } from '../../activities/tools/sandbox';
import type { ToolResult } from '../../activities/tools/result';
import { userMessageUpdate } from '../../workflows/definitions';
import { say, sessionEnv, use } from '../fixtures/session-harness';
import { followEventTopic } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';
import { compiledWorker } from '../fixtures/compiled-cli';

const GRANTED = 'granted.keel.test';
const NOT_GRANTED = 'elsewhere.keel.test';
/** A public address (example.com's): the proxy allows only public addresses. */
const GRANTED_ADDRESS = '93.184.215.14';

vi.mock('node:dns/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof dnsPromises>();
  const lookup = ((name: string, options?: unknown) =>
    name === GRANTED ? Promise.resolve([{ address: GRANTED_ADDRESS, family: 4 }]) : (actual.lookup as (n: string, o?: unknown) => Promise<unknown>)(name, options)) as typeof actual.lookup;
  return { ...actual, lookup, default: { ...actual, lookup } };
});

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const [node, serverScript] = await compiledWorker('mcp-server');
/** The test server (test/fixtures/mcp-server.ts, compiled for the run), sandboxed, granted the network to one host name. */
const netServer = {
  command: node,
  args: [serverScript],
  sandbox: { read: [repoRoot], network: true, hosts: [GRANTED] },
  startupTimeoutMs: 20_000,
  callTimeoutMs: 20_000,
};
const targets = [`${GRANTED}:443`, `${NOT_GRANTED}:443`];

/** Rejects when `promise` takes longer than `ms`: a hang is a failure with a name, not a test timeout. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

const records = (beats: unknown[]): ConnectionRecord[] =>
  beats.flatMap((b) => (typeof b === 'object' && b !== null && 'network' in b ? [(b as { network: ConnectionRecord }).network] : []));

beforeAll(async () => {
  expect(await probeSandbox()).toMatchObject({ ok: true });
});

describe('an MCP server with a network grant', () => {
  it('starts, serves a call that connects through the proxy, and closes, each within a bound', async () => {
    const bridge = createMcpBridge(parseMcpConfig({ servers: { net: netServer } }));
    const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-net-')));
    try {
      const mock = new MockActivityEnvironment();
      const beats: unknown[] = [];
      mock.on('heartbeat', (details: unknown) => beats.push(details));
      const result = await within(
        30_000,
        'the first call (start included)',
        mock.run<[], ToolResult, () => Promise<ToolResult>>(() => bridge.activities.callMcpTool({ tool: 'mcp__net__connect', input: { targets }, workspace })),
      );
      expect(result.is_error).toBe(false);
      expect(result.content).toMatch(new RegExp(`^${NOT_GRANTED}:443: HTTP/1.1 403 Forbidden$`, 'm'));
      expect(result.content).not.toMatch(new RegExp(`^${GRANTED}:443: HTTP/1.1 403`, 'm'));
      // What the proxy decided reached the call that was running: its heartbeats.
      expect(records(beats)).toEqual(
        expect.arrayContaining([
          { host: GRANTED, port: 443, decision: 'allowed', address: GRANTED_ADDRESS },
          { host: NOT_GRANTED, port: 443, decision: 'refused', reason: `${NOT_GRANTED} is not on the allow-list` },
        ]),
      );
      // The server is still there for the next call.
      expect(await within(10_000, 'a second call', new MockActivityEnvironment().run<[], ToolResult, () => Promise<ToolResult>>(() => bridge.activities.callMcpTool({ tool: 'mcp__net__echo', input: { text: 'again' }, workspace })))).toEqual({
        is_error: false,
        content: 'echo: again',
      });
    } finally {
      await within(10_000, 'closing the bridge', bridge.close());
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });
});

describe('an MCP server\'s connections through a real worker', () => {
  const { env, workflowBundle } = useTemporal();
  let dir: string;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-net-config-'));
  });
  afterAll(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('are tool.progress events of the call on the session\'s stream, with host and verdict; the result still arrives', async () => {
    const config = path.join(dir, 'mcp.json');
    await fs.writeFile(config, JSON.stringify({ servers: { net: netServer } }));
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          { match: { lastUserContains: 'reach out', hasToolResults: false }, reply: use('mcp__net__connect', { targets }, 'toolu_net') },
          { match: { hasToolResults: true }, reply: say('Noted.') },
        ],
      },
      { KEEL_MCP_CONFIG: config },
    );
    await s.run(async () => {
      const run = await s.start({ mcp: true, policy: { mode: 'full-auto', allow: ['mcp__net__*'] } });
      const progress = followEventTopic<ToolProgressEvent>(env.client, run.handle.workflowId, TOOL_STREAM_TOPIC);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['reach out'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1, 60_000);

      const result = (await run.log()).find((e) => e.kind === 'tool.result') as unknown as { callId: string; status: string; output: string } | undefined;
      expect(result).toMatchObject({ callId: 'toolu_net', status: 'success' });
      expect(result?.output).toMatch(new RegExp(`^${NOT_GRANTED}:443: HTTP/1.1 403 Forbidden$`, 'm'));

      const events = await progress.waitFor((all) => all.filter((e) => e.network).length >= 2, 15_000);
      const network = events.filter((e) => e.network);
      expect(network).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: 'tool.progress', callId: 'toolu_net', tool: 'mcp__net__connect', network: { host: GRANTED, port: 443, decision: 'allowed', address: GRANTED_ADDRESS } }),
          expect.objectContaining({
            kind: 'tool.progress',
            callId: 'toolu_net',
            tool: 'mcp__net__connect',
            network: { host: NOT_GRANTED, port: 443, decision: 'refused', reason: `${NOT_GRANTED} is not on the allow-list` },
          }),
        ]),
      );
      expect(network).toHaveLength(2);
    });
  });
});
