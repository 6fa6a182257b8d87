// Fork and rewind from the console in Chromium (docs/fork-and-rewind.md), against `keel serve`
// as a child process, a real worker and the stand-in model: a session with checkpoints runs
// two turns (a.txt, then b.txt); its page lists turns 0–2 with their checkpoints; the diff
// from turn 1 to 2 says `A b.txt`; "Fork here" at turn 1 opens the fork's page, which says
// whose fork it is, and the fork's workspace has a.txt and not b.txt; the parent's page lists
// the fork; "Rewind here" asks first — dismissed, nothing moves; accepted, the parent is back
// at turn 1 (b.txt gone, turn 2 set aside). `npm run test:e2e -- fork-rewind-console`.
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useChromium, openConsole } from '../fixtures/browser';
import { startServe, TEST_TOKEN, type ServeProcess } from '../fixtures/serve-process';
import { say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();
const chromium = useChromium();

const rules = [
  { match: { lastUserContains: 'STEP 1.', hasToolResults: false }, reply: use('write_file', { path: 'a.txt', content: 'from turn 1' }) },
  { match: { lastUserContains: 'STEP 2.', hasToolResults: false }, reply: use('write_file', { path: 'b.txt', content: 'from turn 2' }) },
  { match: { hasToolResults: true }, reply: say('done') },
  { match: {}, reply: say('ok') },
];

describe('fork and rewind in the console', () => {
  it('turns with checkpoints, a diff between turns, fork here (the fork has the files of its turn), lineage, rewind here after a confirmation', { timeout: 600_000 }, async () => {
    const s = await sessionEnv(env, workflowBundle, { rules });
    let server: ServeProcess | null = null;
    const context = await chromium.browser.newContext({ viewport: { width: 1100, height: 1000 } });
    try {
      await s.run(async () => {
        const run = await s.start({ checkpoints: true });
        const id = run.handle.workflowId;
        const { SessionHandle } = await import('../../client/session-handle');
        const parent = new SessionHandle(env.client, id);
        await parent.send('STEP 1.');
        await parent.send('STEP 2.');
        server = await startServe({ taskQueue: s.taskQueue, workspace: s.workspace });

        const page = await openConsole(context, server.url, TEST_TOKEN);
        await page.goto(`${server.url}/#/session/${encodeURIComponent(id)}`);
        const section = page.locator('section.checkpoints');
        await section.getByRole('heading', { name: 'Turns and checkpoints' }).waitFor({ timeout: 60_000 });
        await expect.poll(() => section.locator('tbody tr').count(), { timeout: 30_000 }).toBe(3);
        expect(await section.locator('p.lineage').textContent()).toContain('No forks.');

        // The diff between turns 1 and 2: b.txt added.
        await section.getByLabel('Files from turn').selectOption('1');
        await section.getByLabel('to turn').selectOption('2');
        await section.getByRole('button', { name: 'Diff' }).click();
        await expect.poll(() => section.getByLabel('files changed from turn 1 to turn 2').textContent(), { timeout: 30_000 }).toBe('A b.txt');

        // Fork here at turn 1: the fork's page opens, says whose fork it is; its files are turn 1's.
        await section.getByRole('button', { name: 'Fork here: turn 1' }).click();
        await page.waitForURL((u) => u.hash.startsWith(`#/session/${encodeURIComponent(`${id}-fork1-`)}`), { timeout: 60_000 });
        const forkId = decodeURIComponent(new URL(page.url()).hash.replace('#/session/', ''));
        await expect.poll(() => page.locator('section.checkpoints p.lineage').textContent(), { timeout: 60_000 }).toContain(`Forked from ${id} at turn 1.`);
        const forkWorkspace = path.join(path.dirname(s.workspace), `${path.basename(s.workspace)}.fork-${forkId.slice(-8)}`);
        await waitUntil(() => fs.readdir(forkWorkspace).catch(() => [] as string[]), (names) => names.includes('a.txt'), 60_000, "the fork's workspace laid out");
        expect(await fs.readFile(path.join(forkWorkspace, 'a.txt'), 'utf8')).toBe('from turn 1');
        await expect(fs.stat(path.join(forkWorkspace, 'b.txt'))).rejects.toThrow();

        // Back on the parent: its fork is listed.
        await page.goto(`${server.url}/#/session/${encodeURIComponent(id)}`);
        await expect.poll(() => page.locator('section.checkpoints p.lineage').textContent(), { timeout: 60_000 }).toContain(`${forkId} (turn 1)`);

        // Rewind here asks first: dismissed, nothing happens.
        const rewindButton = page.locator('section.checkpoints').getByRole('button', { name: 'Rewind here: turn 1' });
        let asked = '';
        page.once('dialog', (d) => {
          asked = d.message();
          void d.dismiss();
        });
        await rewindButton.click();
        await expect.poll(() => asked).toContain(`Rewind ${id} to turn 1?`);
        expect((await parent.checkpoints()).turns.at(-1)!.turn).toBe(2);
        expect(await fs.readFile(path.join(s.workspace, 'b.txt'), 'utf8')).toBe('from turn 2');
        // Accepted: back at turn 1, b.txt gone, turn 2 set aside.
        page.once('dialog', (d) => void d.accept());
        await rewindButton.click();
        await waitUntil(() => parent.checkpoints(), (v) => v.turns.at(-1)!.turn === 1 && v.rewound.length === 1, 60_000, 'the rewind');
        await expect(fs.stat(path.join(s.workspace, 'b.txt'))).rejects.toThrow();
        expect(await fs.readFile(path.join(s.workspace, 'a.txt'), 'utf8')).toBe('from turn 1');
        await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toContain('to turn 1: done');
        await fs.rm(forkWorkspace, { recursive: true, force: true });
      });
    } finally {
      await context.close();
      await (server as ServeProcess | null)?.stop();
    }
  });
});
