// The tool registry as the model and the workflow see it, the interrupted result,
// the policy file loader, and output capping with artifacts for any tool.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { builtinTools, findBuiltinTool, modelToolSpec } from '../../../activities/tools/definitions';
import { loadPolicy } from '../../../activities/tools/policy-file';
import { interruptedToolResult } from '../../../activities/tools/result';
import { executeTool } from '../../../activities/tools/run-tool';
import { makeWorkspace, matching, type TestWorkspace } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(async () => {
  await t.cleanup();
});

describe('tool definitions', () => {
  it('runs only the one-file, one-directory reads as local activities: never a walk, a write or a command', () => {
    expect(builtinTools.filter((tool) => tool.local).map((tool) => tool.name)).toEqual(['read_file', 'list_dir']);
  });

  it('gives the model a JSON schema and a description for every built-in tool', () => {
    expect(builtinTools.map((tool) => tool.name)).toEqual(['read_file', 'list_dir', 'glob', 'grep', 'write_file', 'edit_file', 'run_command', 'ask_user']);
    for (const tool of builtinTools) {
      const spec = modelToolSpec(tool);
      expect(spec.description.length, tool.name).toBeGreaterThan(60);
      expect(spec.input_schema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(spec.input_schema).not.toHaveProperty('$schema');
    }
    expect(modelToolSpec(findBuiltinTool('edit_file')!).input_schema).toEqual({
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'File path relative to the workspace root.' },
        old_string: { type: 'string', minLength: 1, description: expect.any(String) as unknown },
        new_string: { type: 'string', description: 'The text to put in its place.' },
        replace_all: { type: 'boolean', description: expect.any(String) as unknown },
      },
      required: ['path', 'old_string', 'new_string'],
      additionalProperties: false,
    });
    expect(modelToolSpec(findBuiltinTool('run_command')!).input_schema).toMatchObject({
      properties: { command: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } },
    });
  });

  it('marks read-only tools and gives each activity a timeout and a fitting retry policy', () => {
    const readOnly = builtinTools.filter((tool) => tool.readOnly).map((tool) => tool.name);
    expect(readOnly).toEqual(['read_file', 'list_dir', 'glob', 'grep']);
    expect(findBuiltinTool('run_command')?.activity).toEqual({ startToCloseTimeout: 1_860_000, heartbeatTimeout: 5_000, retry: { maximumAttempts: 1 } });
    expect(findBuiltinTool('edit_file')?.activity?.retry.maximumAttempts).toBe(3);
    expect(findBuiltinTool('ask_user')?.activity).toBeUndefined();
  });
});

describe('interruptedToolResult', () => {
  it('tells the model a command was interrupted and may have run partly', () => {
    expect(interruptedToolResult('run_command', 'worker_lost')).toEqual({
      is_error: true,
      content: 'run_command was interrupted: the worker running it stopped responding. The command may have run partly: check its effects before running it again.',
    });
    expect(interruptedToolResult('edit_file', 'timed_out').content).toBe(
      'edit_file was interrupted: it ran out of time. The file may or may not have been changed: read it before retrying.',
    );
    expect(interruptedToolResult('grep', 'cancelled', 'user interrupt').content).toBe('grep was cancelled before it finished (user interrupt).');
  });
});

describe('loadPolicy', () => {
  it('uses the defaults without a file, the file when there is one, and session options over it', async () => {
    const ws = t.ctx().ws;
    expect(await loadPolicy(ws)).toMatchObject({ ok: true, source: 'defaults', origin: { file: null, mode: 'default' }, policy: { mode: 'ask', allow: [], ask: [], deny: [], headless: { ask: 'deny' }, sandbox: 'workspace-write', network: false, sandboxRules: [] } });
    await fs.mkdir(path.join(t.dir, '.keel'));
    await fs.writeFile(path.join(t.dir, '.keel/policy.json'), JSON.stringify({ mode: 'auto-edit', deny: ['run_command(rm *)'] }));
    expect(await loadPolicy(ws, { mode: 'full-auto', allow: ['run_command(npm test*)'] })).toMatchObject({
      ok: true,
      source: '.keel/policy.json within session options',
      origin: { file: '.keel/policy.json', mode: 'file', bound: { mode: 'full-auto' } },
      policy: {
        mode: 'auto-edit',
        allow: ['run_command(npm test*)'],
        ask: [],
        deny: ['run_command(rm *)'],
        headless: { ask: 'deny' },
        sandbox: 'workspace-write',
        network: false,
        sandboxRules: [],
      },
    });
  });

  it('reports invalid files clearly', async () => {
    await fs.mkdir(path.join(t.dir, '.keel'));
    await fs.writeFile(path.join(t.dir, '.keel/policy.json'), '{"mode": "yolo"');
    expect(await loadPolicy(t.ctx().ws)).toEqual({ ok: false, error: matching(/^invalid \.keel\/policy\.json: not JSON/) });
    await fs.writeFile(path.join(t.dir, '.keel/policy.json'), '{"mode": "yolo"}');
    expect(await loadPolicy(t.ctx().ws)).toEqual({ ok: false, error: matching(/^invalid \.keel\/policy\.json:\n {2}mode: Invalid option/) });
    expect(await loadPolicy(t.ctx().ws, { deny: ['rm('] })).toMatchObject({ ok: false });
  });
});

describe('output cap', () => {
  it('cuts any tool result beyond the cap and saves the full text as an artifact', async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `match ${i} ${'z'.repeat(200)}`).join('\n');
    await fs.writeFile(path.join(t.dir, 'many.txt'), lines);
    const result = await executeTool(t.ctx(), 'grep', { pattern: 'match', max_results: 2000 });
    expect(result.is_error).toBe(false);
    expect(Buffer.byteLength(result.content)).toBeLessThan(31_000);
    expect(result.content).toMatch(/bytes cut here\. The full output is saved at \.keel\/artifacts\/grep-[0-9a-f]{16}\.txt/);
    const full = await fs.readFile(path.join(t.dir, result.artifact ?? ''), 'utf8');
    expect(full.split('\n').filter((line) => line.startsWith('many.txt:'))).toHaveLength(2000);
  });
});
