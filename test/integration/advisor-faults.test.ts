// The planner and the critic survive a cut connection as a turn does. `npm test` once failed
// on chaos seed 80023 with "goal-0: stopped: the critic failed: Activity task failed: Could
// not reach the model API: fetch failed (other side closed)": a proxy in front of the model
// closed the connection before answering the critic. Here a proxy does exactly that, to the
// planner's and the critic's first requests, and the goal must still be met.
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { createKeelWorker } from '../../worker/worker';
import { goalWorkflow } from '../../workflows/goal';
import { critic, KEY, makeWorkspace, plan, planner, review, task, writesFile } from '../fixtures/goal-harness';
import { uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** Forwards to `target`; the first `cuts` requests offering `tool` get their socket closed before any answer. */
async function cuttingProxy(target: string, cutsPerTool: Record<string, number>) {
  const cut: Record<string, number> = Object.fromEntries(Object.keys(cutsPerTool).map((t) => [t, 0]));
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const tool = Object.keys(cutsPerTool).find((t) => body.includes(`"name":"${t}"`));
      if (tool !== undefined && cut[tool]! < cutsPerTool[tool]!) {
        cut[tool]! += 1;
        req.socket.destroy();
        return;
      }
      const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('planner and critic calls', () => {
  it('a connection cut before the answer (chaos seed 80023) is retried: the goal is met', async () => {
    const standin = await startStandin({
      scenario: {
        rules: [
          { match: planner(), reply: plan([task('note', 'Write a note', 'Write note.txt')]) },
          ...writesFile('note', 'note.txt', 'note\n'),
          { match: critic(), reply: review('pass', 'note.txt exists') },
        ],
      },
    });
    const proxy = await cuttingProxy(standin.url, { submit_plan: 1, submit_review: 2 });
    const workspace = await makeWorkspace('keel-advisor-faults-');
    const taskQueue = uniqueTaskQueue('advisor-faults');
    const keel = await createKeelWorker({ connection: env.nativeConnection, namespace: env.namespace, taskQueue, workflowBundle, workflowsOnCallingThread: true, env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: proxy.url }, log: () => {} });
    const running = keel.run();
    try {
      // No test override of the activity options: the goal runs with the defaults, as in chaos.
      const handle = await env.client.workflow.start(goalWorkflow, {
        taskQueue,
        workflowId: `goal-${taskQueue}`,
        args: [{ goal: 'write a note', workspace, policy: { mode: 'full-auto' }, autoApprove: true, headless: true }],
      });
      const result = await handle.result();
      expect(result.verdict, result.summary).toBe('goal_met');
      expect(proxy.cut).toEqual({ submit_plan: 1, submit_review: 2 });
      expect(await fs.readFile(`${workspace}/note.txt`, 'utf8')).toBe('note\n');
    } finally {
      keel.worker.shutdown();
      await running;
      await proxy.close();
      await standin.close();
      await fs.rm(workspace, { recursive: true, force: true });
    }
  }, 120_000);
});
