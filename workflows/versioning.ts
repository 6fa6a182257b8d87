// How Keel's workflows move between builds under Temporal's Worker Deployment Versioning
// (docs/deployment.md, "Versions and upgrades"). A session, a goal and an agent are pinned:
// every task of a run goes to the build it started on, so a turn, a plan or a task never
// changes code half-way and no change needs a patch to be safe for the runs already going.
// When a newer build becomes the deployment's target, the server says so on each workflow
// task (`targetWorkerDeploymentVersionChanged`); a session or goal then hands over at its next
// quiet point (no turn running, no activity in flight: the same hand-over as for a long
// history, workflows/host.ts) and continues as new with AUTO_UPGRADE: the next run starts on
// the target build. An unversioned worker never sees the flag, and nothing changes.
// The flag comes with a workflow task: a run with nothing to do (a session waiting for a
// message) has none, so the deploy step sends it a nudge (client/deployments.ts), whose task
// lets it see the flag and hand over at once.
import type { ContinueAsNewOptions } from '@temporalio/workflow';
import { defineSignal, setHandler, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';

/**
 * A signal that asks nothing: it only gives an idle run a workflow task, where it sees that a
 * newer build is targeted. A build from before it has no handler and buffers it, which does
 * the same (the signal is in the history either way; no command follows from it).
 */
export const UPGRADE_NUDGE = 'keelUpgradeNudge';
const upgradeNudgeSignal = defineSignal<[]>(UPGRADE_NUDGE);

/** Takes the deploy step's nudge (see UPGRADE_NUDGE): `check` is the run's own "hand over now?" (a session's is its wait condition: nothing to add). */
export function listenForUpgradeNudge(check: () => void = () => undefined): void {
  setHandler(upgradeNudgeSignal, check);
}

/**
 * Pins a workflow type to the build its run started on — on a versioned worker only: a
 * workflow task completed with a versioning behaviour by an unversioned worker is refused by
 * the server ("versioning behavior cannot be specified without deployment options being set
 * with versioned mode"), so the behaviour is declared per run, from the worker's deployment (an
 * unversioned worker reports a build id of its own, but no deployment name).
 */
export function pinned<A extends unknown[], R>(workflow: (...args: A) => Promise<R>): void {
  setWorkflowOptions(() => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'PINNED' } : {}), workflow);
}

/** Whether the deployment's target build is no longer the one this run is pinned to. */
export function newerBuildTargeted(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged === true;
}

/**
 * The continue-as-new option that starts the next run on the target build when a newer one
 * is targeted; nothing otherwise (a run continued for its history's size stays on its build).
 */
export function upgradeOnContinue(): Pick<ContinueAsNewOptions, 'initialVersioningBehavior'> {
  return newerBuildTargeted() ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : {};
}
