// `keel check-replay [--histories DIR] [--from-server [--query Q] [--limit N]] [--json]`: replays
// histories against this build's workflow code (KEEL_WORKFLOW_BUNDLE, else the compiled bundle,
// else workflows/ bundled from source: what a worker with this environment would run) and
// exits 1 naming each history that breaks and the event it breaks at. The check a CI job runs
// before a deploy (docs/deployment.md, "Versions and upgrades").
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withClient } from './common';
import { EXIT, Output } from './output';

export interface CheckReplayCommandOptions {
  histories?: string;
  fromServer?: boolean;
  query?: string;
  limit?: string;
  json?: boolean;
}

/** The saved histories beside the code: what every build must still replay. */
export const DEFAULT_HISTORIES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/histories');

export async function checkReplayCommand(o: CheckReplayCommandOptions): Promise<void> {
  const [{ checkReplay, historiesFromDirectory, historiesFromServer, replayReportLines }, { keelReplayOptions }] = await Promise.all([import('../../worker/check-replay'), import('../../worker/worker')]);
  // The replay worker's own log (state changes, the core's "Failing workflow task" warnings on
  // stdout) would bury the report and break --json: errors only.
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });
  } catch {
    // Already installed by this process: its logging stays.
  }
  const limit = o.limit === undefined ? 200 : Number(o.limit);
  const run = async (sources: Parameters<typeof checkReplay>[1], out: Output): Promise<number> => {
    const report = await checkReplay(await keelReplayOptions(process.env), sources);
    if (out.json) out.emit(report);
    else for (const line of replayReportLines(report)) out.line(line);
    return report.broken > 0 ? EXIT.error : EXIT.ok;
  };
  if (o.fromServer) {
    if (!Number.isInteger(limit) || limit < 1) {
      process.stderr.write(`keel: --limit must be a whole number above 0, not ${o.limit}\n`);
      process.exitCode = EXIT.usage;
      return;
    }
    return withClient(o.json, async (keel, out) => run(await historiesFromServer(keel.client, { taskQueue: keel.taskQueue, limit, ...(o.query ? { query: o.query } : {}) }), out));
  }
  const out = new Output(Boolean(o.json));
  try {
    process.exitCode = await run(historiesFromDirectory(o.histories ?? DEFAULT_HISTORIES), out);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (out.json) out.emit({ error: { code: EXIT.error, type: error instanceof Error ? error.name : 'Error', message } });
    else process.stderr.write(`keel: ${message}\n`);
    process.exitCode = EXIT.error;
  } finally {
    // A replay worker that failed to start can leave the SDK's native runtime holding the
    // process open: a CI step must end. Unref'd, this waits for nothing else.
    setTimeout(() => process.exit(), 2_000).unref();
  }
}
