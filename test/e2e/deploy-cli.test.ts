// In test/e2e (`npm run test:e2e -- deploy-cli`): 15 s loaded, and npm test is held under 8 minutes (issue #52).
// `keel deploy current|ramp|status` as a process (the compiled CLI, as people run it) against
// the dev server, with two versioned Keel workers of one deployment on the test's task queue.
// The SDK functions behind it (client/deployments.ts) are exercised by the versions tests; this
// one checks what the command line adds: the deployment from KEEL_DEPLOYMENT_NAME or
// --deployment, the percent checked, the text and --json answers, and that `current` nudges
// an idle session across (it moves to the new build at once).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { createKeelWorker, type KeelWorker } from '../../worker/worker';
import { stateQuery } from '../../workflows/definitions';
import { cliEnv, keel } from '../fixtures/client-cli';
import { KEY, makeWorkspace, waitUntil } from '../fixtures/session-harness';
import { stopWhenTestEnds } from '../fixtures/worker-teardown';
import { useTemporal } from '../fixtures/use-temporal';
import { uniqueTaskQueue } from '../helpers/temporal';

const { env, workflowBundle } = useTemporal();

describe('keel deploy, run as a process', () => {
  it('makes a build current, ramps another, shows both, and moves an idle session to the new current build', async () => {
    const taskQueue = uniqueTaskQueue('deploy-cli');
    const deployment = `keel-cli-${randomUUID().slice(0, 8)}`;
    const workspace = await makeWorkspace('keel-deploy-cli-');
    const workers: KeelWorker[] = [];
    for (const buildId of ['b1', 'b2']) {
      const w = await createKeelWorker({
        connection: env.nativeConnection,
        namespace: env.namespace,
        taskQueue,
        workflowBundle,
        workflowsOnCallingThread: true,
        env: { ANTHROPIC_API_KEY: KEY, KEEL_DEPLOYMENT_NAME: deployment, KEEL_BUILD_ID: buildId, KEEL_REPAIR_SWEEP_SECONDS: '0' },
        log: () => {},
      });
      workers.push(w);
      stopWhenTestEnds(w.worker, w.run());
    }
    const cli = { ...cliEnv(taskQueue), KEEL_DEPLOYMENT_NAME: deployment };
    const deploy = (...args: string[]) => keel(['deploy', ...args], cli);

    // A version exists once a worker of it has polled: until then the server refuses to make it current.
    const first = await waitUntil(() => deploy('current', 'b1', '--json'), (r) => r.code === 0, 30_000, 'b1 made current');
    expect(first.json()).toEqual({ deploymentName: deployment, current: 'b1', nudged: [] });

    const keelClient = await KeelClient.connect({ client: env.client, taskQueue });
    const session = await keelClient.startSession({ workspace, policy: { mode: 'ask' } });
    await waitUntil(() => session.workflowHandle.query(stateQuery), (s) => s.status === 'active', 30_000, 'the session set up');
    const buildOf = async () => (await session.workflowHandle.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId;
    expect(await waitUntil(buildOf, (b) => b !== undefined, 30_000, 'the session on a build')).toBe('b1');

    const ramp = await waitUntil(() => deploy('ramp', 'b2', '25', '--json'), (r) => r.code === 0, 30_000, 'b2 ramped');
    expect(ramp.json()).toEqual({ deploymentName: deployment, current: 'b1', ramping: 'b2', rampingPercent: 25 });
    const [status, over, unnamed] = await Promise.all([
      // Text, with the deployment named on the command line instead of in the environment.
      keel(['deploy', 'status', '--deployment', deployment], cliEnv(taskQueue)),
      // Refused before any call: a percent out of range, and no deployment named at all.
      deploy('ramp', 'b2', '150'),
      keel(['deploy', 'status'], cliEnv(taskQueue)),
    ]);
    expect({ code: status.code, stdout: status.stdout.trim() }).toEqual({ code: 0, stdout: `${deployment}: current b1, ramping b2 at 25%` });
    expect({ code: over.code, stderr: over.stderr.trim() }).toEqual({ code: 2, stderr: 'keel: <percent> is 0 to 100, not 150' });
    expect({ code: unnamed.code, stderr: unnamed.stderr.trim() }).toEqual({ code: 2, stderr: 'keel: which deployment? --deployment <name> or KEEL_DEPLOYMENT_NAME' });

    // b2 current (ending the ramp): the idle session pinned to b1 is nudged and moves at once.
    const current = await deploy('current', 'b2');
    expect(current.code).toBe(0);
    expect(current.stdout.trim()).toBe(`${deployment}: build b2 is current; 1 session(s) and goal(s) on other builds nudged to move to it`);
    expect(await waitUntil(buildOf, (b) => b === 'b2', 30_000, 'the session moved to b2')).toBe('b2');
    expect((await deploy('status', '--json')).json()).toEqual({ deploymentName: deployment, current: 'b2', ramping: null, rampingPercent: 0 });
    await session.close('done');
    expect((await session.result()).outcome).toBe('closed');
  });
});
