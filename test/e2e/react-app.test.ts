// The acceptance run of the packages (issue #51; docs/react.md, docs/sdk.md), `npm run
// test:e2e -- react-app`. As a user would from the registry:
// - `npm run vendor` in examples/react-app packs @keel/react and @keel/client (their prepack
//   builds them) into tarballs; a copy of the example outside the repository installs
//   @keel/react from its tarball (no link into the repository), type-checks against the
//   declarations the package ships (skipLibCheck off) and builds;
// - in headless Chromium, on its own origin (CORS, as a front end beside `keel serve`), the
//   app drives a session through the hooks against a real worker and the model stand-in: a
//   message and its answer, a tool call approved (the file is written), a question answered,
//   a long reply seen as it is written and interrupted (it stops, marked interrupted);
// - a plain Node script (no tsx) in another project installs @keel/client from its tarball
//   and answers a session's approval from its own code; its TypeScript twin type-checks
//   against the package's declarations.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../standin/scenario';
import { launchChromium } from '../fixtures/browser';
import { cliEnv } from '../fixtures/client-cli';
import { startServe, TEST_TOKEN } from '../fixtures/serve-process';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const example = path.join(root, 'examples/react-app');
const tsc = path.join(root, 'node_modules/typescript-7/bin/tsc');
const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], { cwd, maxBuffer: 64 << 20 });

const { env, workflowBundle } = useTemporal();
let browser: Browser;
let work: string;
let app: string;

/** Serves a directory on a free port of 127.0.0.1 (the app's own origin). */
async function serveDir(dir: string): Promise<{ url: string; server: Server }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.map': 'application/json' };
  const server = createServer((req, res) => {
    const file = path.join(dir, new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/$/, '/index.html'));
    if (!file.startsWith(dir)) return void res.writeHead(403).end();
    fs.readFile(file).then(
      (body) => res.writeHead(200, { 'Content-Type': types[path.extname(file)] ?? 'application/octet-stream' }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

beforeAll(async () => {
  work = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-react-app-'));
  // Packed from the repository: prepack builds each package first.
  await fs.rm(path.join(example, 'vendor'), { recursive: true, force: true });
  await run('npm', ['run', 'vendor'], { cwd: example, maxBuffer: 64 << 20 });
  app = path.join(work, 'react-app');
  await fs.cp(example, app, { recursive: true, filter: (src) => !/[/\\](node_modules|public[/\\]app\.js)/.test(src) });
  browser = await launchChromium(['--headless', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking']);
}, 600_000);
afterAll(async () => {
  await browser?.close();
  if (work) await fs.rm(work, { recursive: true, force: true });
});

describe('the packages as a user installs them', () => {
  it('the example app installs @keel/react from its tarball, type-checks against its declarations, and builds', async () => {
    await npm(['install'], app);
    const installed = path.join(app, 'node_modules/@keel/react');
    // A copy, not a link into the repository: what the registry would give.
    expect((await fs.lstat(installed)).isSymbolicLink()).toBe(false);
    expect(existsSync(path.join(installed, 'src'))).toBe(false);
    const manifest = JSON.parse(await fs.readFile(path.join(installed, 'package.json'), 'utf8')) as { version: string };
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(await fs.readFile(path.join(installed, 'CHANGELOG.md'), 'utf8')).toContain(`## ${manifest.version}`);
    // The browser bundle imports nothing of Temporal, the worker or the server.
    const js = (await Promise.all((await fs.readdir(path.join(installed, 'dist'))).filter((f) => f.endsWith('.js')).map((f) => fs.readFile(path.join(installed, 'dist', f), 'utf8')))).join('\n');
    expect([...js.matchAll(/from\s*"([^".][^"]*)"/g)].map((m) => m[1]).filter((s, i, a) => a.indexOf(s) === i).sort()).toEqual(['eventsource-parser/stream', 'react']);
    await run(process.execPath, [tsc, '-p', app], { cwd: app });
    await run(process.execPath, ['build.mjs'], { cwd: app });
    expect(existsSync(path.join(app, 'public/app.js'))).toBe(true);
  }, 600_000);

  it('drives a session through the hooks in Chromium: a message, a tool call approved, a question answered, live text interrupted', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    const site = await serveDir(path.join(app, 'public'));
    const serve = await startServe({ taskQueue: s.taskQueue, workspace: s.workspace, env: { KEEL_CORS_ORIGINS: site.url } });
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    try {
      await s.run(async () => {
        await page.goto(`${site.url}/?server=${encodeURIComponent(serve.url)}&token=${TEST_TOKEN}`);
        await page.getByRole('button', { name: 'Start a session' }).click();
        const status = page.getByTestId('status');
        await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('active');
        const log = page.getByRole('log', { name: 'conversation' });
        const say = async (text: string) => {
          await page.getByLabel('Message').fill(text);
          await page.getByRole('button', { name: 'Send' }).click();
        };

        // A message and the model's answer.
        await say('hello there');
        await expect.poll(() => log.textContent(), { timeout: 30_000 }).toContain('Hello! Ask me to list the files');

        // A tool call waits for approval; approved in the page, the file is written.
        await say('please write a note');
        const approval = page.getByTestId('approval');
        await approval.waitFor({ timeout: 30_000 });
        expect(await approval.textContent()).toContain('write_file');
        await approval.getByRole('button', { name: 'Approve' }).click();
        await approval.waitFor({ state: 'detached', timeout: 30_000 });
        await expect.poll(() => log.textContent(), { timeout: 30_000 }).toContain('Done. The tool said what it said');
        expect(await fs.readFile(path.join(s.workspace, 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');

        // The model asks; the answer goes back through the hook.
        await say('pick a colour');
        const question = page.getByLabel('Which colour do you like?');
        await question.waitFor({ timeout: 30_000 });
        await question.fill('blue');
        await page.getByRole('button', { name: 'Answer' }).click();
        await question.waitFor({ state: 'detached', timeout: 30_000 });
        // The answer is the ask_user call's result in the conversation, and the model went on.
        await expect.poll(() => log.textContent(), { timeout: 30_000 }).toMatch(/↳[^↳]*blue/);
        await expect.poll(async () => ((await log.textContent()) ?? '').split('Done. The tool said').length, { timeout: 30_000 }).toBe(3);

        // A long reply, seen while it is written, then interrupted.
        await say('tell me a story');
        const live = page.getByTestId('live');
        await expect.poll(() => live.textContent().catch(() => ''), { timeout: 30_000 }).toContain('Once upon');
        const seen = (await live.textContent()) ?? '';
        expect(seen.length).toBeLessThan(200);
        await page.getByRole('button', { name: 'Interrupt' }).click();
        await live.waitFor({ state: 'detached', timeout: 30_000 });
        const cut = page.getByTestId('cut');
        await expect.poll(() => cut.textContent(), { timeout: 30_000 }).toContain('(interrupted)');
        expect((await cut.textContent())!.startsWith('Once upon')).toBe(true);
        expect(await page.getByRole('alert').count()).toBe(0);
        expect(consoleErrors).toEqual([]);
      });
    } finally {
      await page.close();
      await serve.stop();
      site.server.close();
    }
  }, 600_000);

  it('a Node script answers an approval with @keel/client installed from its tarball', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    const project = path.join(work, 'script');
    await fs.mkdir(project, { recursive: true });
    await fs.writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'my-script', private: true, type: 'module' }));
    await npm(['install', path.join(example, 'vendor/keel-client-0.1.0.tgz')], project);
    const script = `import { KeelClient } from '@keel/client';
const keel = await KeelClient.connect();
const session = await keel.startSession({ workspace: process.argv[2], policy: { mode: 'ask' } });
await session.post('please write a note');
for await (const item of session.events()) {
  if (item.topic === 'events' && item.data.kind === 'tool.approval_requested') {
    await session.approve(item.data.callId);
    console.log('approved', item.data.callId);
  }
  if (item.topic === 'events' && item.data.kind === 'turn.completed') break;
}
const messages = (await session.transcript()).messages;
console.log('last:', JSON.stringify(messages.at(-1)));
await session.close();
await keel.close();
`;
    await fs.writeFile(path.join(project, 'answer.mjs'), script);
    await fs.writeFile(path.join(project, 'answer.ts'), `declare const process: { argv: string[] };\n${script}`);
    await fs.writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] }, files: ['answer.ts'] }),
    );
    await run(process.execPath, [tsc, '-p', project], { cwd: project });
    await s.run(async () => {
      const { stdout } = await run(process.execPath, ['answer.mjs', s.workspace], { cwd: project, env: cliEnv(s.taskQueue), timeout: 120_000 });
      expect(stdout).toContain('approved toolu_demo_write');
      expect(stdout).toContain('Done. The tool said what it said');
      expect(await fs.readFile(path.join(s.workspace, 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');
    });
  }, 600_000);
});
