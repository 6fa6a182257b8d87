// One command's network grant: Keel's egress proxy (network-proxy.ts) on a Unix socket in
// a directory of its own, which the sandbox mounts; the environment that points the usual
// clients (curl, npm, pip, git) at it; and the log of every connection it allowed or
// refused, which goes out as the call's progress and into its result.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type CommandSandbox } from '../../machines/policy';
import { keelEnv } from '../../shared/env';
import { type ToolContext } from './context';
import { startEgressProxy, type ConnectionRecord } from './network-proxy';
import { SANDBOX_PROXY_PORT } from './sandbox';

export interface NetworkGrant {
  /** Host directory holding proxy.sock, mounted into the sandbox. */
  dir: string;
  env: Record<string, string>;
  connections: ConnectionRecord[];
  close(): Promise<void>;
}

/**
 * Endpoints no grant reaches even on a public address: the Temporal server this worker
 * uses, the Keel API, and any the operator lists (KEEL_SANDBOX_FORBID).
 */
export function forbiddenEndpoints(env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (keelEnv(env, 'KEEL_SANDBOX_FORBID') ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  // TEMPORAL_ADDRESS is the standard Temporal variable (shared/env.ts TEMPORAL_CLIENT_ENV); 8280 is `keel serve`'s port.
  const { TEMPORAL_ADDRESS: temporal } = env;
  return [temporal || 'localhost:7233', 'localhost:8280', ...extra];
}

export async function openNetworkGrant(
  ctx: Pick<ToolContext, 'progress'>,
  sandbox: CommandSandbox,
  onConnection?: (record: ConnectionRecord) => void,
  /** The sandbox's user when it is not the worker's (sandboxIdentity): the socket must be theirs to reach. */
  sandboxUser?: { uid: number; gid: number },
): Promise<NetworkGrant> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-net-'));
  const connections: ConnectionRecord[] = [];
  try {
    const proxy = await startEgressProxy({
      socketPath: path.join(dir, 'proxy.sock'),
      ...(sandbox.hosts ? { hosts: sandbox.hosts } : {}),
      forbidden: forbiddenEndpoints(),
      onConnection: (record) => {
        connections.push(record);
        ctx.progress({ tool: 'run_command', network: record });
        onConnection?.(record);
      },
    });
    if (sandboxUser) {
      await fs.chown(dir, sandboxUser.uid, sandboxUser.gid);
      await fs.chown(path.join(dir, 'proxy.sock'), sandboxUser.uid, sandboxUser.gid);
    }
    const url = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
    const proxyEnv: Record<string, string> = { NO_PROXY: '', no_proxy: '' };
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy', 'npm_config_proxy', 'npm_config_https_proxy']) proxyEnv[name] = url;
    let closing: Promise<void> | undefined;
    return {
      dir,
      env: proxyEnv,
      connections,
      // Once, however many callers: an MCP server's grant is closed both when its process exits and when the pool closes.
      close: () =>
        (closing ??= (async () => {
          await proxy.close();
          await fs.rm(dir, { recursive: true, force: true });
        })()),
    };
  } catch (error) {
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The connections as lines for the result, newest last; at most `max`. */
export function describeConnections(connections: readonly ConnectionRecord[], max = 20): string {
  const shown = connections.slice(-max).map((c) => (c.decision === 'allowed' ? `allowed ${c.host}:${c.port} (${c.address ?? ''})` : `refused ${c.host}:${c.port}: ${c.reason ?? ''}`));
  const more = connections.length > max ? [`… and ${connections.length - max} earlier`] : [];
  return [...more, ...shown].join('; ');
}
