// The MCP servers of one worker process: started on first use over stdio, kept alive
// for the life of the process, restarted on the next use if one has exited.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
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

  async client(server: string): Promise<Client> {
    return (await this.connection(server)).client;
  }

  /** The process id of a running server (for tests and diagnostics). */
  async pid(server: string): Promise<number | null> {
    return (await this.connection(server)).transport.pid;
  }

  private connection(server: string): Promise<Connection> {
    const existing = this.connections.get(server);
    if (existing) return existing;
    const config = this.serverConfig(server);
    if (!config) return Promise.reject(new Error(`no MCP server named ${JSON.stringify(server)} is configured`));
    const starting = this.start(server, config);
    this.connections.set(server, starting);
    // A failed start is forgotten so the next use tries again.
    starting.catch(() => {
      if (this.connections.get(server) === starting) this.connections.delete(server);
    });
    return starting;
  }

  private async start(server: string, config: McpServerConfig): Promise<Connection> {
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'pipe',
    });
    let tail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    const client = new Client({ name: 'keel', version: '0.1.0' });
    const connection: Connection = { client, transport, stderrTail: () => tail };
    client.onclose = () => {
      // The server exited or its pipes closed: start afresh on the next use.
      const current = this.connections.get(server);
      void current?.then((c) => {
        if (c === connection) this.connections.delete(server);
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
