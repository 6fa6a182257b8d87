// The MCP servers of one worker process: one process per server AND workspace, started on
// first use over stdio, kept alive for the life of the process, restarted on the next use
// if one has exited. A server sees its session's workspace as its only MCP root, as its
// working directory (unless configured) and as `${workspace}` in its args, env and cwd:
// a session in one workspace never reaches another's files through a shared server.
//
// The MCP client's modules load with the first server a worker starts: ~0.25 s of CPU that
// every worker start paid before, though most workers have no MCP server configured.
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { type Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type McpConfig, type McpServerConfig } from './config';
import { planLaunch } from './launch';
import { SandboxedStdioTransport } from './transport';
import { resolveLimits } from '../tools/limits';
import { openNetworkGrant, type NetworkGrant } from '../tools/network-grant';
import { type ConnectionRecord } from '../tools/network-proxy';
import { extraReadPaths, prepareMounts, probeSandbox, sandboxIdentity, spawnSandboxed } from '../tools/sandbox';

const STDERR_TAIL_BYTES = 4096;

interface Connection {
  client: Client;
  transport: Transport & { pid: number | null };
  stderrTail: () => string;
  network?: NetworkGrant;
}

export class McpPool {
  private readonly connections = new Map<string, Promise<Connection>>();
  /** Who hears of a server's network connections, by connection key: the calls it is running. */
  private readonly watchers = new Map<string, Set<(record: ConnectionRecord) => void>>();

  constructor(readonly config: McpConfig) {}

  serverConfig(server: string): McpServerConfig | undefined {
    return Object.hasOwn(this.config.servers, server) ? this.config.servers[server] : undefined;
  }

  /** The client of `server` for one workspace (a real, absolute path). */
  async client(server: string, workspace: string): Promise<Client> {
    return (await this.connection(server, workspace)).client;
  }

  /**
   * Hears of every connection Keel's proxy allows or refuses for `server` in `workspace`
   * until the returned function is called: a call reports what the server reached while
   * it ran. With no call running, connections go to the worker's log.
   */
  watchConnections(server: string, workspace: string, sink: (record: ConnectionRecord) => void): () => void {
    const key = `${server}\u0000${workspace}`;
    const sinks = this.watchers.get(key) ?? new Set();
    this.watchers.set(key, sinks);
    sinks.add(sink);
    return () => {
      sinks.delete(sink);
      if (sinks.size === 0 && this.watchers.get(key) === sinks) this.watchers.delete(key);
    };
  }

  /** The process id of a running server (for tests and diagnostics). */
  async pid(server: string, workspace: string): Promise<number | null> {
    return (await this.connection(server, workspace)).transport.pid;
  }

  private connection(server: string, workspace: string): Promise<Connection> {
    const key = `${server}\u0000${workspace}`;
    const existing = this.connections.get(key);
    if (existing) return existing;
    const config = this.serverConfig(server);
    if (!config) return Promise.reject(new Error(`no MCP server named ${JSON.stringify(server)} is configured`));
    const starting = this.start(server, config, workspace, key);
    this.connections.set(key, starting);
    // A failed start is forgotten so the next use tries again.
    starting.catch(() => {
      if (this.connections.get(key) === starting) this.connections.delete(key);
    });
    return starting;
  }

  private async start(server: string, config: McpServerConfig, workspace: string, key: string): Promise<Connection> {
    let plan: ReturnType<typeof planLaunch>;
    try {
      plan = planLaunch(config, workspace);
    } catch (error) {
      throw new Error(`MCP server ${server} (${config.command}) may not start: ${(error as Error).message}`, { cause: error });
    }
    const sandbox = config.sandbox;
    let network: NetworkGrant | undefined;
    let transport: Connection['transport'];
    let tail = '';
    const onStderr = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    };
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    if (sandbox.level === 'off') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const stdio = new StdioClientTransport({ command: plan.executable, args: plan.args, env: plan.env, cwd: plan.cwd, stderr: 'pipe' });
      stdio.stderr?.on('data', onStderr);
      transport = stdio;
    } else {
      const probe = await probeSandbox();
      if (!probe.ok) throw new Error(`MCP server ${server} cannot start: the sandbox is unavailable on this worker (${probe.reason}); its config would have to set "sandbox": {"level": "off"}`);
      const commandSandbox = { level: sandbox.level, network: sandbox.network, ...(sandbox.hosts ? { hosts: sandbox.hosts } : {}) };
      // A connection goes to the calls the server is running (their tool.progress), else to the worker's log.
      const report = (record: ConnectionRecord) => {
        const sinks = this.watchers.get(key);
        if (sinks?.size) for (const sink of sinks) sink(record);
        else console.log(`mcp ${server}: ${JSON.stringify({ network: record })}`);
      };
      const mounts = await prepareMounts({ workspace, sandbox: commandSandbox });
      try {
        if (sandbox.network) network = await openNetworkGrant({ progress: () => undefined }, commandSandbox, report, sandboxIdentity(mounts.owner));
      } catch (error) {
        mounts.close();
        throw error;
      }
      const grant = network;
      const env = { ...plan.env, ...(grant?.env ?? {}) };
      const spec = {
        sandbox: commandSandbox,
        workspace,
        cwd: plan.cwd,
        extraRead: [...extraReadPaths(), ...sandbox.read],
        limits: resolveLimits(sandbox.limits),
        ...(grant ? { proxyDir: grant.dir } : {}),
      };
      transport = new SandboxedStdioTransport(() => spawnSandboxed(spec, [plan.executable, ...plan.args], { env, stdin: 'pipe', detached: false, mounts }), onStderr, config.startupTimeoutMs);
    }
    const client = new Client({ name: 'keel', version: '0.1.0' }, { capabilities: { roots: { listChanged: false } } });
    // The session's workspace is the server's only root.
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: pathToFileURL(workspace).href, name: 'workspace' }] }));
    const connection: Connection = { client, transport, stderrTail: () => tail, ...(network ? { network } : {}) };
    client.onclose = () => {
      void network?.close();
      // The server exited or its pipes closed: start afresh on the next use.
      const current = this.connections.get(key);
      void current?.then((c) => {
        if (c === connection) this.connections.delete(key);
      }, () => undefined);
    };
    try {
      await client.connect(transport, { timeout: config.startupTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      await network?.close();
      const stderr = tail.trim() ? `\nserver stderr:\n${tail.trim()}` : '';
      throw new Error(`MCP server ${server} (${config.command}) did not start: ${(error as Error).message}${stderr}`, { cause: error });
    }
    return connection;
  }

  async close(): Promise<void> {
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(
      all.map(async (pending) => {
        const connection = await pending.catch(() => undefined);
        await connection?.client.close();
        // The server is gone: its proxy goes too, before the worker says it has stopped.
        await connection?.network?.close();
      }),
    );
  }
}
