// `npm run demo` as a user runs it, non-interactively (stdin is not a terminal): once
// with the embedded dev server it starts itself, once against the test server through
// TEMPORAL_ADDRESS. Both must exit 0 with the goal met, the model plainly simulated.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporalServers } from '../helpers/temporal-servers';
import { keelWorkflowBundleFile, testTemporalAddress, uniqueTaskQueue } from '../helpers/temporal';
import { killWhenTestEnds } from '../fixtures/child-teardown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function runDemo(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = killWhenTestEnds(spawn('npm', ['run', '--silent', 'demo'], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] }));
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const k of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'KEEL_TASK_QUEUE']) delete env[k];
  return env;
}

async function expectMet(run: { code: number | null; stdout: string; stderr: string }) {
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  expect(run.stdout).toMatch(/the model is SIMULATED/);
  expect(run.stdout).toMatch(/✓ approved \[tests\] run_command/);
  expect(run.stdout).toMatch(/critic \(pass\)/);
  expect(run.stdout).toMatch(/report: goal met/);
  expect(run.stdout).toMatch(/tests\s+succeeded\s+1\s+slugify\.test\.mjs, `node --test slugify\.test\.mjs` → 0/);
  expect(run.stdout).toMatch(/shutting down what it started/);
  // Not a terminal: no spinner frames, no colour codes.
  expect(run.stdout).not.toContain('\u001b[');
  expect(run.stdout).not.toContain('⠋');
  // The demo keeps its workspace for people to look at; the test removes it.
  const workspace = /workspace: (\S+) \(README\.md, slugify\.mjs, slugify\.test\.mjs\)/.exec(run.stdout)?.[1];
  expect(workspace).toBeTruthy();
  await fs.rm(workspace!, { recursive: true, force: true });
}

// Each demo is fixed work (the first bundles the workflows with webpack, ~20 s of CPU, then a
// goal of three tasks): a minute idle, and what a busy machine makes of it, so the tests' bound
// is wide; what they judge is the output, not the time.
const DEMO_TIMEOUT_MS = 420_000;

describe('npm run demo', () => {
  it('starts its own dev server, worker and stand-in, meets the goal, shows the Web UI link, and exits 0', async () => {
    const run = await runDemo(baseEnv());
    await expectMet(run);
    expect(run.stdout).toMatch(/starting an embedded Temporal dev server/);
    expect(run.stdout).toMatch(/Web UI: http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\/goal-/);
  }, DEMO_TIMEOUT_MS);

  it('uses TEMPORAL_ADDRESS when set (no Web UI link then)', async () => {
    // The run's prebuilt workflow bundle (as `npm run build` gives it): the first test bundles from source.
    const bundle = await keelWorkflowBundleFile();
    const run = await runDemo({ ...baseEnv(), TEMPORAL_ADDRESS: testTemporalAddress(), TEMPORAL_NAMESPACE: temporalServers().namespace, KEEL_TASK_QUEUE: uniqueTaskQueue('demo'), KEEL_WORKFLOW_BUNDLE: bundle });
    await expectMet(run);
    expect(run.stdout).toMatch(new RegExp(`Temporal at ${testTemporalAddress().replace(/\./g, '\\.')}`));
    expect(run.stdout).not.toMatch(/Web UI/);
  }, DEMO_TIMEOUT_MS);
});
