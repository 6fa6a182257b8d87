// The deploy steps of Worker Deployment Versioning (docs/deployment.md, "Versions and upgrades"):
// make a build current, ramp a share of new runs to it, roll back — and nudge the runs pinned
// to other builds. A pinned run learns that a newer build is targeted only on its next workflow
// task (workflows/versioning.ts); a session waiting for a message, or a goal waiting for a plan's
// approval, has none until a human acts, so its old build would have to stay up until then.
// The nudge (a signal that asks nothing) gives each such run a task: it hands over at once if
// it is quiet, or at its next quiet point if not.
import type { Client } from '@temporalio/client';
// Default import: the package is CommonJS, and the compiled CLI (plain node, ESM) has no named exports from it.
import proto from '@temporalio/proto';
import { KeelKind } from '../workflows/search-attributes';
import { UPGRADE_NUDGE } from '../workflows/versioning';

export interface DeploymentTarget {
  /** KEEL_DEPLOYMENT_NAME of the workers. */
  deploymentName: string;
  /** KEEL_BUILD_ID of the build (default: `wf-` + its bundle's hash). */
  buildId: string;
}

const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The open sessions and goals of the deployment pinned to a build other than `buildId`. */
export function pinnedElsewhereQuery(t: DeploymentTarget): string {
  return [
    `TemporalWorkerDeployment = ${quote(t.deploymentName)}`,
    `TemporalWorkerDeploymentVersion != ${quote(`${t.deploymentName}:${t.buildId}`)}`,
    `ExecutionStatus = 'Running'`,
    `${KeelKind.name} IN ('session', 'goal')`,
  ].join(' AND ');
}

/**
 * Sends the nudge to every open session and goal of the deployment pinned to another build:
 * each then moves to the current build at its quiet point (continue-as-new). Answers the ids
 * nudged. A run that ended meanwhile is skipped.
 */
export async function nudgePinnedRuns(client: Client, t: DeploymentTarget): Promise<string[]> {
  const nudged: string[] = [];
  for await (const run of client.workflow.list({ query: pinnedElsewhereQuery(t) })) {
    try {
      await client.workflow.getHandle(run.workflowId, run.runId).signal(UPGRADE_NUDGE);
      nudged.push(run.workflowId);
    } catch {
      // Ended (or continued as new) since it was listed: nothing to move.
    }
  }
  return nudged;
}

/**
 * Makes `buildId` the deployment's current build (new runs, and runs that continue as new with
 * AUTO_UPGRADE, start on it), then nudges the runs pinned elsewhere unless `nudge` is false.
 * Rolling back is the same call with the previous build.
 */
export async function setCurrentBuild(client: Client, t: DeploymentTarget, options: { nudge?: boolean; identity?: string; taskQueue?: string } = {}): Promise<{ nudged: string[] }> {
  await client.workflowService.setWorkerDeploymentCurrentVersion({ namespace: client.options.namespace, deploymentName: t.deploymentName, buildId: t.buildId, identity: options.identity ?? 'keel deploy' });
  if (options.nudge === false) return { nudged: [] };
  // A task dispatched before the queue's partitions learn of the new target still carries the
  // old one: the nudge would be spent. Wait (bounded) until the queue routes to the build.
  if (options.taskQueue) await routedTo(client, options.taskQueue, t.buildId);
  return { nudged: await nudgePinnedRuns(client, t) };
}

/** Waits (up to 30 s) until the task queue's new workflow tasks go to `buildId`. */
async function routedTo(client: Client, taskQueue: string, buildId: string): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    const r = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW });
    if (r.versioningInfo?.currentDeploymentVersion?.buildId === buildId || Date.now() > until) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Sends `percentage` of new runs (and of runs continuing as new with AUTO_UPGRADE) to
 * `buildId`, the rest to the current build; 0 with no build id ends the ramp. Runs already going
 * are not nudged: a ramp is a trial, and each run stays where it is until the build is made current.
 */
export async function setRampingBuild(client: Client, t: { deploymentName: string; buildId: string | null }, percentage: number, options: { identity?: string } = {}): Promise<void> {
  if (!(percentage >= 0 && percentage <= 100)) throw new RangeError(`a ramp is 0 to 100 percent, not ${percentage}`);
  await client.workflowService.setWorkerDeploymentRampingVersion({
    namespace: client.options.namespace,
    deploymentName: t.deploymentName,
    ...(t.buildId ? { buildId: t.buildId } : {}),
    percentage,
    identity: options.identity ?? 'keel deploy',
  });
}

export interface DeploymentRouting {
  current: string | null;
  ramping: string | null;
  rampingPercent: number;
}

/** Where the deployment's new runs go now. */
export async function deploymentRouting(client: Client, deploymentName: string): Promise<DeploymentRouting> {
  const r = await client.workflowService.describeWorkerDeployment({ namespace: client.options.namespace, deploymentName });
  const routing = r.workerDeploymentInfo?.routingConfig;
  return {
    current: routing?.currentDeploymentVersion?.buildId || null,
    ramping: routing?.rampingDeploymentVersion?.buildId || null,
    rampingPercent: routing?.rampingVersionPercentage ?? 0,
  };
}
