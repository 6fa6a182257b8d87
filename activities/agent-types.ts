// Named agent types in the workspace: `.keel/agents/<name>.md`, YAML front matter (description,
// tools, model, limits …: machines/sub-agents.ts agentFileFrontMatter) and the system prompt as
// the body. Read when a run is set up (the `agent` tool's description lists them) and again
// when a call names one (its file as it is then; a malformed file is the call's tool error).
// `.keel/` is protected: the agent cannot write these files (machines/protected-paths.ts).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { isAgentTypeName, agentFileFrontMatter, type AgentType } from '../machines/sub-agents';

export const AGENTS_DIR = path.join('.keel', 'agents');
/** An agent file larger than this is refused (a prompt, not a document). */
const MAX_FILE_BYTES = 256 * 1024;

export type AgentTypeLoad = { ok: true; type: AgentType } | { ok: false; error: string };

/** Parses one agent file's text: front matter between `---` lines, then the system prompt. */
export function parseAgentFile(name: string, text: string): AgentTypeLoad {
  const where = `${AGENTS_DIR}/${name}.md`;
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (match === null) return { ok: false, error: `${where}: no front matter (the file starts with a line "---", then description: …, then "---", then the system prompt)` };
  let front: unknown;
  try {
    front = parseYaml(match[1] ?? '');
  } catch (error) {
    return { ok: false, error: `${where}: the front matter is not valid YAML (${(error as Error).message.split('\n')[0]})` };
  }
  const parsed = agentFileFrontMatter.safeParse(front ?? {});
  if (!parsed.success) return { ok: false, error: `${where}: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}` };
  const system = (match[2] ?? '').trim();
  if (system === '') return { ok: false, error: `${where}: the body (the agent's system prompt) is empty` };
  return { ok: true, type: { ...parsed.data, system } };
}

async function readAgentFile(workspace: string, name: string): Promise<AgentTypeLoad> {
  if (!isAgentTypeName(name)) return { ok: false, error: `agent type ${JSON.stringify(name)}: a name is lower-case letters, digits, _ and -` };
  const file = path.join(workspace, AGENTS_DIR, `${name}.md`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: false, error: `unknown agent type ${JSON.stringify(name)}` };
    return { ok: false, error: `${AGENTS_DIR}/${name}.md: cannot read it (${(error as Error).message})` };
  }
  if (Buffer.byteLength(text) > MAX_FILE_BYTES) return { ok: false, error: `${AGENTS_DIR}/${name}.md: larger than ${MAX_FILE_BYTES} bytes` };
  return parseAgentFile(name, text);
}

/** The workspace's agent types (name and description), and the files that could not be read, by name. */
export async function listAgentFiles(workspace: string): Promise<{ types: { name: string; description: string }[]; problems: string[] }> {
  let names: string[];
  try {
    names = (await readdir(path.join(workspace, AGENTS_DIR))).filter((f) => f.endsWith('.md')).map((f) => f.slice(0, -3)).sort();
  } catch {
    return { types: [], problems: [] };
  }
  const types: { name: string; description: string }[] = [];
  const problems: string[] = [];
  for (const name of names) {
    const loaded = await readAgentFile(workspace, name);
    if (loaded.ok) types.push({ name, description: loaded.type.description });
    else problems.push(loaded.error);
  }
  return { types, problems };
}

export function createAgentTypeActivities() {
  return {
    /** One named type from the workspace's `.keel/agents/`, read and checked when a call names it. */
    async loadAgentType(request: { workspace: string; name: string }): Promise<AgentTypeLoad> {
      return readAgentFile(request.workspace, request.name);
    },
  };
}
