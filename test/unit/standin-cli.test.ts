// `npm run model:standin`: the stand-in as its own process, driven by a scenario file,
// answering the unmodified SDK that finds it through ANTHROPIC_BASE_URL.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { killWhenTestEnds } from '../fixtures/child-teardown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
let child: ChildProcess | undefined;

afterEach(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
});

function start(args: string[]): { child: ChildProcess; output: () => string } {
  let output = '';
  child = killWhenTestEnds(spawn(tsx, ['standin/main.ts', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function waitForOutput(output: () => string, pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = pattern.exec(output());
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in output:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('stand-in CLI', () => {
  it('serves a scenario file to the SDK configured through the environment, and stops on SIGINT', async () => {
    const run = start(['--scenario', 'test/fixtures/scenarios/demo.yaml', '--port', '0']);
    const [, url] = await waitForOutput(run.output, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const previous = process.env.ANTHROPIC_BASE_URL;
    process.env.ANTHROPIC_BASE_URL = url;
    try {
      const client = new Anthropic({ apiKey: 'demo', maxRetries: 0 });
      const message = await client.messages
        .stream({ model: 'claude-sonnet-4-6', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] })
        .finalMessage();
      expect(message.content).toEqual([{ type: 'text', text: 'Hello! I am the Keel stand-in for the Messages API.' }]);
    } finally {
      if (previous === undefined) delete process.env.ANTHROPIC_BASE_URL;
      else process.env.ANTHROPIC_BASE_URL = previous;
    }
    await waitForOutput(run.output, /#1 POST \/v1\/messages turn 1 rule greeting -> 200 completed/);
    run.child.kill('SIGINT');
    const [code] = (await once(run.child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });

  it('explains a scenario it cannot use, and exits non-zero', async () => {
    const run = start(['--scenario', 'test/fixtures/scenarios/does-not-exist.yaml']);
    const [code] = (await once(run.child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(run.output()).toContain('does-not-exist.yaml');
    const usage = start([]);
    const [usageCode] = (await once(usage.child, 'exit')) as [number | null];
    expect(usageCode).toBe(2);
    expect(usage.output()).toContain('usage: npm run model:standin -- --scenario FILE');
  });
});
