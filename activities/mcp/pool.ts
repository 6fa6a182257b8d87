// The MCP servers of one worker process: one process per server AND workspace, started on
// first use over stdio, kept alive for the life of the process, restarted on the next use
// if one has exited. A server sees its session's workspace as its only MCP root, as its
// working directory (unless configured) and as `${workspace}` in its args, env and cwd:
// a session in one workspace never reaches another's files through a shared server.
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { type McpConfig, type McpServerConfig } from './config';

const STDERR_TAIL_BYTES = 4096;

interface Connection {
  client: Client;
  transport: StdioClientTransport;
  stderrTail: () => string;
}

export class McpPool {
  private readonly connections = new Map<string, Promise<Connection>>();

  constructor(readonly config: McpConfig) {}

  serverConfig(server: string): McpServerConfig | undefined {
    return Object.hasOwn(this.config.servers, server) ? this.config.servers[server] : undefined;
  }

  /** The client of `server` for one workspace (a real, absolute path). */
  async client(server: string, workspace: string): Promise<Client> {
    return (await this.connection(server, workspace)).client;
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
    const fill = (text: string) => text.replaceAll('${workspace}', workspace);
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args.map(fill),
      env: Object.fromEntries(Object.entries(config.env).map(([name, value]) => [name, fill(value)])),
      cwd: config.cwd ? fill(config.cwd) : workspace,
      stderr: 'pipe',
    });
    let tail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    const client = new Client({ name: 'keel', version: '0.1.0' }, { capabilities: { roots: { listChanged: false } } });
    // The session's workspace is the server's only root.
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: pathToFileURL(workspace).href, name: 'workspace' }] }));
    const connection: Connection = { client, transport, stderrTail: () => tail };
    client.onclose = () => {
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
      const stderr = tail.trim() ? `\nserver stderr:\n${tail.trim()}` : '';
      throw new Error(`MCP server ${server} (${config.command}) did not start: ${(error as Error).message}${stderr}`, { cause: error });
    }
    return connection;
  }

  async close(): Promise<void> {
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(all.map(async (pending) => (await pending.catch(() => undefined))?.client.close()));
  }
}
