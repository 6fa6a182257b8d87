// `keel deploy current|ramp|status`: the deploy steps of Worker Deployment Versioning
// (client/deployments.ts, docs/deployment.md "Versions and upgrades"). `current` makes a build
// current and nudges the sessions and goals pinned to other builds, so idle ones move to it at
// once; rolling back is `current` with the previous build. The deployment is KEEL_DEPLOYMENT_NAME
// unless --deployment names another.
import type { Command } from 'commander';
import { keelEnv } from '../../shared/env';
import { deploymentRouting, setCurrentBuild, setRampingBuild } from '../deployments';
import { CliExit, withClient } from './common';
import { EXIT } from './output';

function deploymentOf(o: { deployment?: string }): string {
  const name = o.deployment ?? keelEnv(process.env, 'KEEL_DEPLOYMENT_NAME')?.trim();
  if (!name) throw new CliExit(EXIT.usage, 'which deployment? --deployment <name> or KEEL_DEPLOYMENT_NAME');
  return name;
}

export function registerDeployCommands(program: Command): void {
  const deploy = program.command('deploy').description('versioned workers: make a build current (and move idle sessions and goals to it), ramp, roll back, show');

  deploy
    .command('current')
    .description('make <build-id> current: new runs start on it; sessions and goals pinned to other builds are nudged and move at their quiet point (roll back: the previous build)')
    .argument('<build-id>')
    .option('--deployment <name>', 'default KEEL_DEPLOYMENT_NAME')
    .option('--no-nudge', 'do not nudge the runs pinned to other builds (idle ones then stay until a human acts)')
    .option('--json')
    .action((buildId: string, o: { deployment?: string; nudge: boolean; json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        const deploymentName = deploymentOf(o);
        const { nudged } = await setCurrentBuild(keel.client, { deploymentName, buildId }, { nudge: o.nudge, taskQueue: keel.taskQueue });
        if (out.json) return out.emit({ deploymentName, current: buildId, nudged });
        out.line(`${deploymentName}: build ${buildId} is current; ${nudged.length} session(s) and goal(s) on other builds nudged to move to it`);
      }),
    );

  deploy
    .command('ramp')
    .description('send <percent> of new runs to <build-id> (the rest to the current build); 0 ends the ramp')
    .argument('<build-id>')
    .argument('<percent>')
    .option('--deployment <name>', 'default KEEL_DEPLOYMENT_NAME')
    .option('--json')
    .action((buildId: string, percent: string, o: { deployment?: string; json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        const deploymentName = deploymentOf(o);
        const p = Number(percent);
        if (!(p >= 0 && p <= 100)) throw new CliExit(EXIT.usage, `<percent> is 0 to 100, not ${percent}`);
        await setRampingBuild(keel.client, { deploymentName, buildId: p === 0 ? null : buildId }, p);
        const routing = await deploymentRouting(keel.client, deploymentName);
        if (out.json) return out.emit({ deploymentName, ...routing });
        out.line(`${deploymentName}: current ${routing.current ?? '-'}, ramping ${routing.ramping ?? '-'} at ${routing.rampingPercent}%`);
      }),
    );

  deploy
    .command('status')
    .description('where new runs go: the current build and the ramping one')
    .option('--deployment <name>', 'default KEEL_DEPLOYMENT_NAME')
    .option('--json')
    .action((o: { deployment?: string; json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        const deploymentName = deploymentOf(o);
        const routing = await deploymentRouting(keel.client, deploymentName);
        if (out.json) return out.emit({ deploymentName, ...routing });
        out.line(`${deploymentName}: current ${routing.current ?? '-'}, ramping ${routing.ramping ?? '-'} at ${routing.rampingPercent}%`);
      }),
    );
}
