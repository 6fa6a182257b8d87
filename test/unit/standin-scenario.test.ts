// Scenarios: the schema (from JSON, YAML or an object) and how rules match requests.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { factsOf, matches } from '../../standin/match';
import { loadScenario, parseScenario } from '../../standin/scenario';
import { tempDir } from '../fixtures/temp-dir';

const scenarios = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/scenarios');

describe('scenario files', () => {
  it('loads YAML and JSON files', async () => {
    const demo = await loadScenario(path.join(scenarios, 'demo.yaml'));
    expect(demo.name).toBe('demo');
    expect(demo.rules.map((rule) => rule.name)).toContain('greeting');
    const faults = await loadScenario(path.join(scenarios, 'faults.json'));
    expect(faults.rules[0]!.fault).toEqual({ kind: 'status', status: 529, retryAfter: 1 });
    expect(faults.rules[1]!.fault).toEqual({ kind: 'drop', afterEvents: 5 });
  });

  it('rejects a bad scenario and says where and why', async () => {
    const dir = tempDir('standin-');
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'rules:\n  - match: { turn: 0 }\n    reply: { content: [] }\n  - match: {}\n');
    const error = (await loadScenario(file).catch((caught: unknown) => caught)) as Error;
    expect(error.message).toContain(file);
    expect(error.message).toContain('rules[0].match.turn');
    expect(error.message).toContain('rules[0].reply.content');
    expect(error.message).toContain('a rule needs a reply, a fault, or both');
  });

  it('rejects unknown fields and fault kinds instead of ignoring them', () => {
    expect(() => parseScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'x' }] }, mtach: {} }] })).toThrow(/mtach/);
    expect(() => parseScenario({ rules: [{ fault: { kind: 'explode' } }] })).toThrow(/fault\.kind/);
    expect(() => parseScenario({ rules: [{ match: { lastUserMatches: '(' }, fault: { kind: 'hang' } }] })).toThrow(/regular expression/);
  });
});

describe('rule matching', () => {
  const body = {
    model: 'claude-haiku-4-5',
    stream: true,
    system: [{ type: 'text', text: 'You are a build agent.' }],
    tools: [{ name: 'read_file' }, { name: 'run_command' }],
    messages: [
      { role: 'user', content: 'build the project' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run_command', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'exit code 2: missing dependency' }] },
    ],
  };
  const facts = factsOf(body, 7);

  it('reads the facts a rule can match on', () => {
    expect(facts).toEqual({
      request: 7,
      turn: 2,
      model: 'claude-haiku-4-5',
      stream: true,
      lastUserText: 'exit code 2: missing dependency',
      hasToolResults: true,
      tools: ['read_file', 'run_command'],
      systemText: 'You are a build agent.',
    });
  });

  it('matches every condition given, and nothing else', () => {
    expect(matches({}, facts)).toBe(true);
    expect(matches({ turn: 2, hasToolResults: true, toolsOffered: ['run_command'], systemContains: 'build agent' }, facts)).toBe(true);
    expect(matches({ lastUserContains: 'missing dependency', lastUserMatches: '^exit code \\d' }, facts)).toBe(true);
    expect(matches({ request: 7, model: 'claude-haiku-4-5', stream: true }, facts)).toBe(true);
    expect(matches({ turn: 1 }, facts)).toBe(false);
    expect(matches({ hasToolResults: false }, facts)).toBe(false);
    expect(matches({ toolsOffered: ['read_file', 'write_file'] }, facts)).toBe(false);
    expect(matches({ stream: false }, facts)).toBe(false);
    expect(matches({ lastUserContains: 'build the project' }, facts)).toBe(false);
  });
});
