// A worker is versioned only when KEEL_DEPLOYMENT_NAME is set (worker/deployment.ts): unset, it
// is unversioned as before; set, it registers <name>:<build id> with sessions, goals and agents
// pinned, the build id KEEL_BUILD_ID or the hash of the bundle it runs.
import { describe, expect, it } from 'vitest';
import { buildIdOf, DeploymentConfigError, resolveDeployment, workerDeploymentFromEnv } from '../../worker/deployment';

const code = () => 'bundle code';

describe('worker deployment options from the environment', () => {
  it('leaves a worker unversioned without KEEL_DEPLOYMENT_NAME (blank is unset)', () => {
    expect(workerDeploymentFromEnv({}, code)).toBeNull();
    expect(workerDeploymentFromEnv({ KEEL_DEPLOYMENT_NAME: '' }, code)).toBeNull();
  });

  it('versions it with KEEL_DEPLOYMENT_NAME: pinned by default, the build id given or the bundle hash', () => {
    expect(workerDeploymentFromEnv({ KEEL_DEPLOYMENT_NAME: 'keel', KEEL_BUILD_ID: '2026-11-29_1' }, code)).toEqual({
      version: { deploymentName: 'keel', buildId: '2026-11-29_1' },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
    const derived = workerDeploymentFromEnv({ KEEL_DEPLOYMENT_NAME: 'keel' }, code);
    expect(derived?.version.buildId).toBe(buildIdOf('bundle code'));
    expect(buildIdOf('bundle code')).toMatch(/^wf-[0-9a-f]{16}$/);
    // Other code, another id; the same code, the same id.
    expect(buildIdOf('other code')).not.toBe(buildIdOf('bundle code'));
    expect(buildIdOf('bundle code')).toBe(buildIdOf('bundle code'));
  });

  it('refuses what Temporal would: a build id without a deployment, and the separators . and :', () => {
    expect(() => workerDeploymentFromEnv({ KEEL_BUILD_ID: 'b1' }, code)).toThrow(DeploymentConfigError);
    expect(() => workerDeploymentFromEnv({ KEEL_DEPLOYMENT_NAME: 'keel', KEEL_BUILD_ID: '1.2.3' }, code)).toThrow(/Temporal reserves/);
    expect(() => workerDeploymentFromEnv({ KEEL_DEPLOYMENT_NAME: 'ke:el', KEEL_BUILD_ID: 'b1' }, code)).toThrow(/Temporal reserves/);
  });

  it('hashes the bundle the worker runs, bundling from source only when it has none and needs the hash', async () => {
    let bundled = 0;
    const fromSource = () => ((bundled += 1), Promise.resolve({ code: 'from source' }));
    expect(await resolveDeployment({}, undefined, fromSource)).toEqual({ deployment: null, workflowBundle: undefined });
    expect((await resolveDeployment({ KEEL_DEPLOYMENT_NAME: 'keel', KEEL_BUILD_ID: 'b1' }, undefined, fromSource)).workflowBundle).toBeUndefined();
    expect(bundled).toBe(0);
    const given = await resolveDeployment({ KEEL_DEPLOYMENT_NAME: 'keel' }, { code: 'given' }, fromSource);
    expect(given.deployment?.version.buildId).toBe(buildIdOf('given'));
    expect(bundled).toBe(0);
    const made = await resolveDeployment({ KEEL_DEPLOYMENT_NAME: 'keel' }, undefined, fromSource);
    expect(made).toMatchObject({ deployment: { version: { buildId: buildIdOf('from source') } }, workflowBundle: { code: 'from source' } });
    expect(bundled).toBe(1);
  });
});
