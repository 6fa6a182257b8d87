// MCP servers the worker starts (stdio), validated at the edge with clear errors.
import { z } from 'zod';
import { SandboxLevel } from '../../machines/policy';
import { NetworkHosts, SandboxLimitsInput } from '../../machines/sandbox-grant';

/** What the server's sandbox grants beyond a command's defaults; every grant is written out. */
export const McpSandboxConfig = z
  .object({
    /** How the workspace is bound; `off` runs the server unconfined and must be written out. */
    level: SandboxLevel.default('workspace-write'),
    network: z.boolean().default(false),
    hosts: NetworkHosts.optional(),
    /** Absolute host paths the server may read (its own code, say). */
    read: z.array(z.string().refine((p) => p.startsWith('/'), 'an absolute path')).default([]),
    limits: SandboxLimitsInput.optional(),
  })
  .strict();
export type McpSandboxConfig = z.infer<typeof McpSandboxConfig>;

export const McpServerConfig = z
  .object({
    command: z.string().min(1).describe('Executable to start, e.g. "npx" or "/usr/local/bin/my-server".'),
    args: z.array(z.string()).default([]),
    /** Added to the SDK's safe default environment (PATH, HOME, …); nothing else is inherited. */
    env: z.record(z.string(), z.string()).default({}),
    /** Inside the workspace (relative to it, or `${workspace}/…`); a cwd outside is refused. */
    cwd: z.string().optional(),
    sandbox: McpSandboxConfig.default({ level: 'workspace-write', network: false, read: [] }),
    /** How long one tool call may take. */
    callTimeoutMs: z.number().int().positive().default(120_000),
    /** How long starting the server and listing its tools may take. */
    startupTimeoutMs: z.number().int().positive().default(30_000),
  })
  .strict();
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** `__` separates server from tool in `mcp__<server>__<tool>`, so a server name may not contain it. */
export const McpServerName = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/, 'server names use letters, digits, "_" and "-"')
  .refine((name) => !name.includes('__'), 'server names may not contain "__" (it separates server and tool)');

export const McpConfig = z
  .object({
    servers: z.record(z.string(), McpServerConfig).default({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    // Checked here rather than as the record's key schema, whose errors do not say why.
    for (const name of Object.keys(config.servers)) {
      const checked = McpServerName.safeParse(name);
      if (!checked.success) {
        for (const issue of checked.error.issues) ctx.addIssue({ code: 'custom', path: ['servers', name], message: issue.message });
      }
    }
  });
export type McpConfig = z.infer<typeof McpConfig>;
export type McpConfigInput = z.input<typeof McpConfig>;

export function parseMcpConfig(raw: unknown, source = 'MCP config'): McpConfig {
  const result = McpConfig.safeParse(raw ?? {});
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${issue.path.length ? issue.path.join('.') : '(top level)'}: ${issue.message}`);
  throw new Error(`invalid ${source}:\n${lines.join('\n')}`);
}
