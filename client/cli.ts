// `keel`: the command line of Keel (client/bin/keel.js runs it through tsx, no build step).
// Every command takes --json for scripts; exit codes are in client/cli/output.ts (EXIT) and
// docs/cli.md.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { chatCommand, type ChatOptions } from './cli/chat';
import type { CodecServerCommandOptions } from './cli/codec';
import type { HostMoveCommandOptions } from './cli/host';
import type { RepairCommandOptions } from './cli/repair';
import type { ForkCommandOptions } from './cli/session';
import type { GoalForkCommandOptions } from './cli/goal-fork';
import type { CheckReplayCommandOptions } from './cli/check-replay';
import { answerCommand, type AnswerOptions, controlCommand, type ControlOptions, type GoalCommandOptions, goalCommand, lsCommand, statusCommand, watchCommand } from './cli/commands';
import { EXIT } from './cli/output';
import type { ServeCommandOptions } from './cli/serve';
import { registerScheduleCommands } from './cli/schedule';
import { registerDeployCommands } from './cli/deploy';

// `keel ls | head`: a closed pipe ends the command quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok);
  throw error;
});

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Keel's version: the checkout's package.json, the one place it is written. */
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

const program = new Command('keel')
  .description('Keel: durable autonomous agents on Temporal. Connection: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*; queue: KEEL_TASK_QUEUE.')
  .version(version, '-V, --version', 'print the version of Keel and exit')
  .showHelpAfterError()
  .exitOverride();

program
  .command('dev')
  .description('a local Temporal dev server with the Web UI, plus a Keel worker (as npm run dev)')
  .action(async () => {
    await import(pathToFileURL(path.join(root, 'scripts', 'dev.ts')).href);
  });

program
  .command('serve')
  .description('the HTTP API and web console on 127.0.0.1:8280 (bearer token; see docs/console-and-api.md)')
  .option('--port <n>', 'port (default 8280 or KEEL_SERVE_PORT)')
  .option('--host <addr>', 'address to listen on (default 127.0.0.1)')
  .option('--workspace <dir>', 'default workspace of goals and sessions started from the console')
  // Loaded when run: the API server, hono and esbuild are no part of the other commands' start.
  .action(async (o: ServeCommandOptions) => (await import('./cli/serve')).serveCommand(o));

program
  .command('worker')
  .description('a Keel worker on TEMPORAL_ADDRESS and KEEL_TASK_QUEUE (as npm run worker)')
  .action(async () => {
    await import(pathToFileURL(path.join(root, 'worker', 'main.ts')).href);
  });

program
  .command('goal')
  .description('start a goal and follow it live: plan, tasks, model text, approvals, report')
  .argument('<text>', 'what to achieve')
  .option('--workspace <dir>', 'directory the agents work in (default: the current one)')
  .option('--auto-approve', 'start executing the plan without asking')
  .option('--mode <mode>', 'tool policy: read-only | ask | auto-edit | full-auto')
  .option('--budget-usd <n>', 'stop the goal when it has spent this much')
  .option('--model <name>', 'model of the planner, critic and agents')
  .option('--id <id>', 'workflow id (starting the same id again gives the same goal)')
  .option('-y, --yes', 'answer yes to every approval (plan and tool calls)')
  .option('--detach', 'start it and print its id, without following')
  .option('--json', 'print the final report as JSON')
  .action((text: string, o: GoalCommandOptions) => goalCommand(text, o))
  // `keel goal fork`: a goal from a plan version or a finished task of a goal started with checkpoints (client/cli/goal-fork.ts).
  .command('fork')
  .description("a new goal from a plan version or a finished task, with that plan or a changed one: tasks done by then kept, the others run again, the files in a new workspace; the parent is untouched")
  .argument('<id>', 'the goal')
  .option('--at-plan <n>', 'a plan version')
  .option('--after-task <id>', 'a finished task')
  .option('--plan-file <file>', "the fork's whole plan: a JSON array of tasks (id, title, instructions, dependencies, priority, role), checked as a planner's")
  .option('--workspace <dir>', "the fork's workspace (default: beside the parent's)")
  .option('--id <id>', "the fork's workflow id")
  .option('--json')
  // `--json`, `--id` and `--workspace` are also `keel goal`'s: commander gives them to it, so they are read there too.
  .action(async (id: string, o: GoalForkCommandOptions, cmd: Command) => {
    const { json, id: forkId, workspace } = cmd.parent?.opts<GoalForkCommandOptions>() ?? {};
    await (await import('./cli/goal-fork')).goalForkCommand(id, { ...(json !== undefined ? { json } : {}), ...(forkId !== undefined ? { id: forkId } : {}), ...(workspace !== undefined ? { workspace } : {}), ...o });
  });

program
  .command('chat')
  .description('a conversation with a session: streamed replies, inline approvals, /interrupt /steer /pause /resume /close')
  .option('--session <id>', 'continue this session (default: start a new one)')
  .option('--workspace <dir>', 'directory the tools work in (new sessions)')
  .option('--mode <mode>', 'tool policy of a new session: read-only | ask | auto-edit | full-auto')
  .option('--json', 'print the stream as JSON lines')
  .action((o: ChatOptions) => chatCommand(o));

for (const decision of ['approve', 'deny'] as const) {
  program
    .command(decision)
    .description(decision === 'approve' ? "approve a waiting tool call (or, on a goal without a call id, its plan)" : 'deny a waiting tool call (or reject a goal\'s plan with --reason as feedback)')
    .argument('<workflowId>')
    .argument('[callId]', 'the call, as --call')
    .option('--call <callId>', 'the call to answer (needed when more than one waits)')
    .option('--reason <text>')
    .option('--scope <scope>', 'approve: once | session')
    .option('-y, --yes', 'approve without asking (the call is still shown)')
    .option('--json')
    .action((id: string, callId: string | undefined, o: AnswerOptions) => answerCommand(decision, id, callId, o));
}

for (const control of ['interrupt', 'pause', 'close', 'cancel'] as const) {
  program
    .command(control)
    .description(control === 'cancel' ? 'cancel a goal (a session: close it)' : `${control} a session`)
    .argument('<workflowId>')
    .option('--reason <text>')
    .option('--json')
    .action((id: string, o: ControlOptions) => controlCommand(control, id, o));
}
program
  .command('resume')
  .description('resume a paused session')
  .argument('<workflowId>')
  .option('--json')
  .action((id: string, o: ControlOptions) => controlCommand('resume', id, o));
program
  .command('steer')
  .description('add guidance to the running turn of a session')
  .argument('<workflowId>')
  .argument('<text...>')
  .option('--agent <child>', "steer a running sub-agent instead: its label (research-1), id or agent call id")
  .option('--json')
  .action((id: string, text: string[], o: ControlOptions) => controlCommand('steer', id, { ...o, text: text.join(' ') }));

program
  .command('ls')
  .description('running goals and sessions (search attributes)')
  .option('--waiting', 'only those waiting for approval')
  .option('--kind <kind>', 'goal | session | agent')
  .option('--status <status>', 'a Keel status, e.g. awaiting_plan_approval')
  .option('--all', 'closed ones too')
  .option('--json')
  .action((o: Parameters<typeof lsCommand>[0]) => lsCommand(o));

program
  .command('watch')
  .description('follow a goal or session live')
  .argument('<id>')
  .option('--from <offset>', 'stream offset to start at (default 0)')
  .option('--json', 'stream items as JSON lines')
  .action((id: string, o: { json?: boolean; from?: string }) => watchCommand(id, o));

program
  .command('status')
  .description("a goal's or session's state")
  .argument('<id>')
  .option('--json')
  .action((id: string, o: { json?: boolean }) => statusCommand(id, o));

const host = program.command('host').description('operator commands for workspace hosts (KEEL_WORKSPACE_HOST)');
host
  .command('move')
  .description("move every running session, goal and agent whose workspace is on <from> (a host that never comes back) to <to>; a worker with KEEL_WORKSPACE_HOST=<to> must be running")
  .argument('<from>', 'the old host (its KEEL_WORKSPACE_HOST)')
  .argument('<to>', 'the new host')
  .option('--files <files>', 'copy: the files come along (from --source, or found at the same path on <to>); lost: they are gone, each run goes on in an empty workspace and its log says so', 'copy')
  .option('--source <path>', "copy: where the old host's files are readable on <to> (its disk mounted there, a restored backup), each workspace's path below it")
  .option('--json')
  .action(async (from: string, to: string, o: HostMoveCommandOptions) => (await import('./cli/host')).hostMoveCommand(from, to, o));

const session = program.command('session').description('fork and rewind a session started with checkpoints (docs/fork-and-rewind.md)');
session
  .command('fork')
  .description("a new session from a turn: the conversation up to it, the files as they were then in a new workspace; the parent is untouched")
  .argument('<id>', 'the session')
  .option('--at <n>', 'the turn (0: before the first)')
  .option('--checkpoint <id>', 'a checkpoint by id instead (one a rewind set aside too)')
  .option('--workspace <dir>', "the fork's workspace (default: beside the parent's)")
  .option('--id <id>', "the fork's workflow id")
  .option('--json')
  .action(async (id: string, o: ForkCommandOptions) => (await import('./cli/session')).forkCommand(id, o));
session
  .command('rewind')
  .description('back to a turn: later turns set aside (forkable), files restored; the session waits for the next message')
  .argument('<id>', 'the session')
  .option('--to <n>', 'the turn')
  .option('--no-files', 'leave the workspace as it is (the conversation only)')
  .option('--json')
  .action(async (id: string, o: { to?: string; files?: boolean; json?: boolean }) => (await import('./cli/session')).rewindCommand(id, o));
session
  .command('checkpoints')
  .description("a session's turns with their checkpoints, and the turns rewinds set aside")
  .argument('<id>')
  .option('--json')
  .action(async (id: string, o: { json?: boolean }) => (await import('./cli/session')).checkpointsCommand(id, o));
session
  .command('diff')
  .description('files added (A), removed (D) and changed (M) between two turns')
  .argument('<id>')
  .argument('<from>', 'a turn')
  .argument('<to>', 'a later (or earlier) turn')
  .option('--json')
  .action(async (id: string, from: string, to: string, o: { json?: boolean }) => (await import('./cli/session')).diffCommand(id, from, to, o));

program
  .command('repair')
  .description("a run whose workflow tasks keep failing because the Temporal SDK cannot replay its history: reset it to before the misordered task when that is the SDK's known update-ordering fault (workers do this by themselves for the runs the server marks); otherwise say why not")
  .argument('<id>', 'the workflow id of the session, goal or agent')
  .option('--run-id <id>', 'a run other than the latest')
  .option('--dry-run', 'say what would be done; change nothing')
  .option('--json')
  .action(async (id: string, o: RepairCommandOptions) => (await import('./cli/repair')).repairCommand(id, o));

program
  .command('check-replay')
  .description("replay histories against this build's workflow code (KEEL_WORKFLOW_BUNDLE, else dist/, else workflows/): exit 1 naming each history that breaks and the event it breaks at; run it in CI before a deploy")
  .option('--histories <dir>', 'saved histories (*.json, searched recursively); default test/histories')
  .option('--from-server', "instead: the open runs of KEEL_TASK_QUEUE on TEMPORAL_ADDRESS, their histories downloaded")
  .option('--query <q>', 'with --from-server: a visibility query instead of the open runs of the queue')
  .option('--limit <n>', 'with --from-server: at most this many runs (default 200)')
  .option('--json')
  .action(async (o: CheckReplayCommandOptions) => (await import('./cli/check-replay')).checkReplayCommand(o));

program
  .command('codec-server')
  .description('decode Keel\'s encrypted payloads for the Temporal Web UI and CLI (needs KEEL_ENCRYPTION_KEYS; token KEEL_CODEC_TOKEN, else one is made and printed)')
  .option('--port <n>', 'port to listen on', '8888')
  .option('--host <addr>', 'address to bind', '127.0.0.1')
  .option('--cors <origin...>', 'browser origins allowed (the Web UI); any other Origin is refused', ['http://localhost:8233', 'http://127.0.0.1:8233', 'http://localhost:8080'])
  .option('--allowed-host <name...>', 'Host names it answers besides its bind address (e.g. behind a proxy)')
  .action(async (o: CodecServerCommandOptions) => (await import('./cli/codec')).codecServerCommand(o));

program
  .command('keygen')
  .description('print a new encryption key line for KEEL_ENCRYPTION_KEYS (put it first to rotate)')
  .option('--id <id>', 'key id (default: k<today>)')
  .action(async (o: { id?: string }) => (await import('./cli/codec')).keygenCommand(o));

registerScheduleCommands(program);
registerDeployCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  else throw error;
}
