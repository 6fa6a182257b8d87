// MCP tools as Temporal activities: list them once per session, call them with a
// timeout, heartbeats on progress and cancellation; `isError` becomes a tool error.
import { Context } from '@temporalio/activity';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { type ToolResult, toolError } from '../tools/result';
import { capResult, DEFAULT_OUTPUT_CAP_BYTES } from '../tools/artifacts';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../tools/workspace';
import { refusePathsOutside } from './paths';
import { type ToolActivityOptions } from '../tools/definitions';
import { progressEvents, toolCallKey } from '../tools/activity';
import { type McpConfig } from './config';
import { mcpToolName, parseMcpToolName } from './names';
import { McpPool } from './pool';
import { renderMcpContent } from './render';

export interface McpToolDescription {
  spec: { name: string; description: string; input_schema: Record<string, unknown> };
  server: string;
  kind: 'mcp';
  /** From the server's readOnlyHint: may run in parallel. The policy still asks by default. */
  readOnly: boolean;
  activityOptions: ToolActivityOptions;
}

export interface McpToolList {
  tools: McpToolDescription[];
  /** Servers that could not be reached: the session starts without their tools and says why. */
  errors: { server: string; message: string }[];
}

export interface CallMcpToolRequest {
  /**
   * The session's workspace: the server instance of this workspace runs the call (its
   * only root), file arguments must lie inside it, and truncated output is saved there.
   */
  workspace?: string;
  tool: string;
  input: unknown;
  /** The model's tool call id: the server's network connections during the call are its `tool.progress` events. */
  callId?: string;
}

const HEARTBEAT_EVERY_MS = 500;

/** MCP tools may change things: no automatic retry, and a short heartbeat timeout. */
export function mcpActivityOptions(callTimeoutMs: number): ToolActivityOptions {
  return { startToCloseTimeout: callTimeoutMs + 15_000, heartbeatTimeout: 10_000, retry: { maximumAttempts: 1 } };
}

export interface McpBridge {
  activities: {
    listMcpTools(): Promise<McpToolList>;
    callMcpTool(request: CallMcpToolRequest): Promise<ToolResult>;
  };
  pool: McpPool;
  /** Stops every server; call on worker shutdown. */
  close(): Promise<void>;
}

export function createMcpBridge(config: McpConfig, options: { outputCapBytes?: number } = {}): McpBridge {
  const pool = new McpPool(config);
  const outputCap = options.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES;
  // Tools are listed before any session names a workspace: from instances rooted in an
  // empty directory of their own, which no call ever uses.
  let listingRoot: Promise<string> | undefined;
  const listingWorkspace = () => (listingRoot ??= fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-list-')).then((dir) => fs.realpath(dir)));

  async function listServerTools(server: string): Promise<McpToolDescription[]> {
    const serverConfig = pool.serverConfig(server);
    if (!serverConfig) return [];
    const client = await pool.client(server, await listingWorkspace());
    const tools: McpToolDescription[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: serverConfig.startupTimeoutMs });
      for (const tool of page.tools) {
        tools.push({
          spec: {
            name: mcpToolName(server, tool.name),
            description: `[MCP server ${server}] ${tool.description ?? tool.title ?? tool.name}`,
            input_schema: tool.inputSchema,
          },
          server,
          kind: 'mcp',
          readOnly: tool.annotations?.readOnlyHint === true,
          activityOptions: mcpActivityOptions(serverConfig.callTimeoutMs),
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  return {
    pool,
    async close() {
      await pool.close();
      // The listing directory is the bridge's own: gone with it, not left in the temp directory
      // once per worker start. Removed after the servers rooted in it have stopped.
      const dir = await listingRoot?.catch(() => undefined);
      if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
    },
    activities: {
      async listMcpTools(): Promise<McpToolList> {
        const servers = Object.keys(config.servers);
        const settled = await Promise.allSettled(servers.map(listServerTools));
        const list: McpToolList = { tools: [], errors: [] };
        settled.forEach((outcome, index) => {
          if (outcome.status === 'fulfilled') list.tools.push(...outcome.value);
          else list.errors.push({ server: servers[index] ?? '?', message: errorMessage(outcome.reason) });
        });
        return list;
      },

      async callMcpTool(request: CallMcpToolRequest): Promise<ToolResult> {
        const context = Context.current();
        const parsed = parseMcpToolName(request.tool);
        if (!parsed) return toolError(`${request.tool} is not an MCP tool name (mcp__<server>__<tool>)`);
        const serverConfig = pool.serverConfig(parsed.server);
        if (!serverConfig) return toolError(`no MCP server named ${JSON.stringify(parsed.server)} is configured`);
        if (request.input !== undefined && (typeof request.input !== 'object' || request.input === null || Array.isArray(request.input))) {
          return toolError(`invalid input for ${request.tool}: expected an object of arguments`);
        }
        if (!request.workspace) return toolError(`${request.tool}: MCP tools run only inside a session's workspace, and none was given`);
        const ws = await openWorkspace(request.workspace);
        const refusal = await refusePathsOutside(ws, request.input);
        if (refusal) return toolError(`${request.tool}: ${refusal}`);
        // What the server connects to while it runs this call (and while it starts for it) is this call's progress.
        const published = request.callId && context.info.workflowExecution ? progressEvents(context.info, { callId: request.callId, tool: request.tool }) : undefined;
        const unwatch = pool.watchConnections(parsed.server, ws.root, (record) => {
          context.heartbeat({ tool: request.tool, network: record });
          published?.events.offer({ network: record });
        });
        let client: Awaited<ReturnType<McpPool['client']>>;
        try {
          client = await pool.client(parsed.server, ws.root);
        } catch (error) {
          unwatch();
          await published?.close();
          throw error;
        }
        const beat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
        let result: ToolResult;
        try {
          const answer = await client.callTool(
            { name: parsed.tool, arguments: (request.input ?? {}) as Record<string, unknown> },
            undefined,
            {
              signal: context.cancellationSignal,
              timeout: serverConfig.callTimeoutMs,
              onprogress: (progress) => context.heartbeat({ tool: request.tool, ...progress }),
            },
          );
          result = renderMcpContent(answer);
        } catch (error) {
          if (context.cancellationSignal.aborted) throw context.cancellationSignal.reason;
          if (error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number)) {
            result = toolError(`${request.tool} timed out after ${serverConfig.callTimeoutMs} ms`);
          } else if (error instanceof McpError && error.code !== (ErrorCode.ConnectionClosed as number)) {
            // The server refused the call (unknown tool, invalid arguments, …): the model can act on that.
            result = toolError(`${request.tool}: ${error.message}`);
          } else {
            throw error; // the server died or the pipe broke: an infrastructure fault
          }
        } finally {
          clearInterval(beat);
          unwatch();
          await published?.close();
        }
        return capResult(ws, result, {
          capBytes: outputCap,
          callKey: toolCallKey(context.info),
          label: request.tool,
        });
      },
    },
  };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
