// defineTool: one object per tool gives the model its spec, the policy its kind and the worker
// a dispatch typed by the input. A half-added tool does not compile (tsc on the fixtures in
// test/fixtures/lint/define-tool), and a bad input or a ToolError comes back to the model as a
// tool error, not as an activity failure.
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../../activities/tools/define-tool';
import { builtinTools, modelToolSpec, toolRegistry } from '../../../activities/tools/definitions';
import { executeTool } from '../../../activities/tools/run-tool';
import { builtinToolSpecs } from '../../../machines/builtin-tools';
import { builtinToolKinds, toolKind } from '../../../machines/policy';
import { shoutTool, stampTool } from '../../fixtures/custom-tools';
import { makeWorkspace, type TestWorkspace } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(async () => {
  await t.cleanup();
});

describe('a tool defined with defineTool', () => {
  const registry = toolRegistry([shoutTool, stampTool]);

  it('runs with the input its schema parsed', async () => {
    expect(await executeTool(t.ctx(), 'shout', { text: 'hi', times: 2 }, registry)).toEqual({ content: 'HI HI', is_error: false });
    expect(await executeTool(t.ctx(), 'stamp', { word: 'ok' }, registry)).toEqual({ content: 'stamped ok', is_error: false });
  });

  it('answers bad input and a ToolError as tool errors the model can act on', async () => {
    const bad = await executeTool(t.ctx(), 'shout', { text: 'hi', times: 9 }, registry);
    expect(bad).toEqual({ is_error: true, content: expect.stringMatching(/^invalid input for shout:\n- times: .*5/) as unknown });
    expect(await executeTool(t.ctx(), 'shout', { words: 'hi' }, registry)).toMatchObject({ is_error: true, content: expect.stringContaining('invalid input for shout') as unknown });
    expect(await executeTool(t.ctx(), 'shout', { text: 'forbidden words' }, registry)).toEqual({ is_error: true, content: 'shout: that text may not be shouted' });
  });

  it('lets any other error through: that is an activity failure, retried by its activity options', async () => {
    const broken = defineTool({ name: 'broken', description: 'Always fails.', kind: 'read', input: z.object({}), run: () => Promise.reject(new Error('disk on fire')) });
    await expect(executeTool(t.ctx(), 'broken', {}, toolRegistry([broken]))).rejects.toThrow('disk on fire');
  });

  it('gives the model the JSON Schema of its input, after the built-in tools', () => {
    expect(registry.map((tool) => tool.name)).toEqual([...builtinTools.map((tool) => tool.name), 'shout', 'stamp']);
    expect(modelToolSpec(shoutTool)).toEqual({
      name: 'shout',
      description: shoutTool.description,
      input_schema: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1, description: 'What to shout.' }, times: { type: 'integer', minimum: 1, maximum: 5, description: 'How often. Default 1.' } },
        required: ['text'],
        additionalProperties: false,
      },
    });
    expect(shoutTool).toMatchObject({ kind: 'read', readOnly: true, local: false, activity: { startToCloseTimeout: 60_000 } });
    expect(stampTool).toMatchObject({ kind: 'write', readOnly: false });
  });

  it('is refused at worker start when its name is taken, an MCP name or not one the API takes, or when only a read could run locally', () => {
    expect(() => toolRegistry([shoutTool, shoutTool])).toThrow('tool shout is defined twice');
    const input = z.object({});
    const run = async () => 'x';
    expect(() => toolRegistry([defineTool({ name: 'read_file', description: 'Mine.', kind: 'read', input, run })])).toThrow(/read_file is defined twice \(or is a built-in/);
    expect(() => defineTool({ name: 'mcp__x__y', description: 'Mine.', kind: 'read', input, run })).toThrow(/MCP servers' tools/);
    expect(() => defineTool({ name: 'two words', description: 'Mine.', kind: 'read', input, run })).toThrow(/1-128 letters/);
    expect(() => defineTool({ name: 'local_write', description: 'Mine.', kind: 'write', input, run, local: true })).toThrow(/only a read tool/);
  });
});

describe('the built-in tools', () => {
  it('give the policy its table of kinds: the specs are the one source', () => {
    expect(builtinToolKinds).toEqual(Object.fromEntries(builtinToolSpecs.map((spec) => [spec.name, spec.kind])));
    expect(builtinToolKinds).toEqual({ read_file: 'read', list_dir: 'read', glob: 'read', grep: 'read', write_file: 'write', edit_file: 'write', run_command: 'execute', ask_user: 'interact' });
    // A definition cannot turn a built-in tool or an MCP tool into something else.
    expect(toolKind('run_command', 'read')).toBe('execute');
    expect(toolKind('mcp__fs__write', 'read')).toBe('mcp');
    expect(toolKind('shout', 'read')).toBe('read');
    expect(toolKind('nobody_defined_it')).toBe('unknown');
  });

  it('each run its own implementation, bound to its spec (no dispatch table to forget)', async () => {
    expect(builtinTools.filter((tool) => tool.execute === undefined).map((tool) => tool.name)).toEqual(['ask_user']);
    expect(await executeTool(t.ctx(), 'list_dir', { path: 'nowhere' })).toMatchObject({ is_error: true, content: expect.stringContaining('list_dir:') as unknown });
    expect(await executeTool(t.ctx(), 'ask_user', { question: 'why?' })).toMatchObject({ is_error: true, content: expect.stringContaining('the workflow handles it') as unknown });
  });
});

describe('a half-added tool', () => {
  // One tsc run over the fixtures (TypeScript 7, as `npm run typecheck`): seconds, even on 2 busy cores.
  it('does not compile', { timeout: 120_000 }, () => {
    const tsc = spawnSync(process.execPath, ['node_modules/typescript-7/bin/tsc', '-p', 'test/fixtures/lint/define-tool/tsconfig.json'], { encoding: 'utf8' });
    const errors = tsc.stdout.split('\n').filter((line) => / error TS\d+/.test(line));
    const of = (file: string) => errors.filter((line) => line.startsWith(`test/fixtures/lint/define-tool/${file}`)).join('\n');
    // Errors, and no crash (TypeScript 7 exits 1 with errors; 5.x exited 2).
    expect(tsc.status, tsc.stdout + tsc.stderr).toBe(1);
    // defineTool without run.
    expect(of('no-run.ts')).toMatch(/error TS\d+: Property 'run' is missing in type .* 'ToolDefinition<"no_run"/);
    // run reading a field the input schema does not have.
    expect(of('wrong-input.ts')).toMatch(/error TS2551: Property 'whom' does not exist on type '\{ who: string; \}'/);
    // A spec in the list without its implementation, and an implementation without a spec.
    expect(of('spec-without-implementation.ts')).toMatch(/error TS2741: Property 'bye' is missing/);
    expect(of('implementation-without-spec.ts')).toMatch(/error TS2353: .*'bye' does not exist in type 'Implementations</);
    // The whole tool compiles.
    expect(of('complete.ts')).toBe('');
    expect(errors).toHaveLength(4);
  });
});
