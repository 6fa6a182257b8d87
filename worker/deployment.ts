// Temporal Worker Deployment Versioning for a Keel worker (docs/deployment.md, "Versions and
// upgrades"). KEEL_DEPLOYMENT_NAME set: the worker registers as version <name>:<build id> of
// that deployment, and the server sends each run's tasks to the build it is pinned to; unset,
// the worker is unversioned, as before, and every worker of the queue takes every task.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { WorkerDeploymentOptions, WorkerOptions } from '@temporalio/worker';
import { keelEnv } from '../shared/env';

export class DeploymentConfigError extends Error {
  override readonly name = 'DeploymentConfigError';
}

/**
 * A build id the server accepts: up to 255 characters, and Temporal reserves `.` and `:` as
 * separators between a deployment name and a build id in a version's canonical string.
 */
const BUILD_ID = /^[A-Za-z0-9_\-+]{1,255}$/;
const DEPLOYMENT_NAME = /^[A-Za-z0-9_\-+]{1,255}$/;

/**
 * The versioned worker's deployment options, or null for an unversioned worker. A workflow's
 * own declaration wins over the default (workflows/versioning.ts: sessions, goals and agents are
 * pinned); the default covers any workflow type that declares none.
 */
export function workerDeploymentFromEnv(env: NodeJS.ProcessEnv, bundleCode: () => string): WorkerDeploymentOptions | null {
  const deploymentName = keelEnv(env, 'KEEL_DEPLOYMENT_NAME')?.trim();
  const given = keelEnv(env, 'KEEL_BUILD_ID')?.trim();
  if (!deploymentName) {
    if (given) throw new DeploymentConfigError('KEEL_BUILD_ID is set without KEEL_DEPLOYMENT_NAME: set both for a versioned worker, or neither');
    return null;
  }
  if (!DEPLOYMENT_NAME.test(deploymentName)) throw new DeploymentConfigError(`KEEL_DEPLOYMENT_NAME ${JSON.stringify(deploymentName)}: letters, digits, _ - + only (Temporal reserves . and :)`);
  const buildId = given ?? buildIdOf(bundleCode());
  if (!BUILD_ID.test(buildId)) throw new DeploymentConfigError(`KEEL_BUILD_ID ${JSON.stringify(buildId)}: letters, digits, _ - + only, at most 255 (Temporal reserves . and :)`);
  return { version: { deploymentName, buildId }, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

type WorkflowBundle = NonNullable<WorkerOptions['workflowBundle']>;

/**
 * What a worker runs when versioned: its deployment options and the bundle it hashed for its
 * build id. A worker run from source with no KEEL_BUILD_ID bundles workflows/ itself here (it
 * would at start anyway), so the id is the hash of the code it runs.
 */
export async function resolveDeployment(
  env: NodeJS.ProcessEnv,
  bundle: WorkflowBundle | undefined,
  bundleFromSource: () => Promise<{ code: string }>,
): Promise<{ deployment: WorkerDeploymentOptions | null; workflowBundle: WorkflowBundle | undefined }> {
  if (!keelEnv(env, 'KEEL_DEPLOYMENT_NAME')?.trim() || keelEnv(env, 'KEEL_BUILD_ID')?.trim()) return { deployment: workerDeploymentFromEnv(env, () => ''), workflowBundle: bundle };
  const made = bundle ?? (await bundleFromSource());
  const code = 'code' in made ? made.code : readFileSync(made.codePath, 'utf8');
  return { deployment: workerDeploymentFromEnv(env, () => code), workflowBundle: made };
}

/**
 * The build id of a workflow bundle: its code's hash. Two workers that run the same code get
 * the same id, whatever machine built it; any change to the workflow code gives a new one.
 */
export function buildIdOf(code: string): string {
  return `wf-${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
}

/** The start-up line of a versioned worker. */
export function deploymentLine(options: WorkerDeploymentOptions): string {
  return `keel worker: versioned: deployment ${options.version.deploymentName}, build ${options.version.buildId} (sessions, goals and agents pinned to it; they move to a newer current build when they continue as new)`;
}
