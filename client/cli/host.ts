// `keel host move <from> <to> [--files copy|lost] [--source PATH]`: an operator replaces a
// workspace host that never comes back (client/host-move.ts sends each run the move; the new
// host's worker lays the workspaces out). One line per run moved, the lost ones saying so;
// exit 1 when a run on <from> could not be moved (it stays there, waiting for it).
import { HOST_MOVE_FILES, type HostMoveFiles } from '../../machines/host-move';
import { CliExit, withClient } from './common';
import { EXIT } from './output';

export interface HostMoveCommandOptions {
  files?: string;
  source?: string;
  json?: boolean;
}

export function hostMoveCommand(from: string, to: string, o: HostMoveCommandOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const files = o.files ?? 'copy';
    if (!(HOST_MOVE_FILES as readonly string[]).includes(files)) throw new CliExit(EXIT.usage, `--files must be one of ${HOST_MOVE_FILES.join(', ')}`);
    if (o.source !== undefined && files !== 'copy') throw new CliExit(EXIT.usage, '--source goes with --files copy (lost files have nowhere to come from)');
    const report = await keel.moveHost(from, to, { files: files as HostMoveFiles, ...(o.source !== undefined ? { source: o.source } : {}) });
    if (out.json) {
      out.emit(report);
      return report.failed.length > 0 ? EXIT.error : EXIT.ok;
    }
    for (const run of report.moved) out.line(`${run.kind ?? 'run'} ${run.id}: ${run.outcome === 'already_there' ? `already on host "${to}"` : run.message}`);
    for (const run of report.failed) process.stderr.write(`keel: ${run.kind ?? 'run'} ${run.id} not moved (it stays on host "${from}"): ${run.error}\n`);
    const moved = report.moved.filter((r) => r.outcome === 'moved').length;
    out.line(
      `${moved} ${moved === 1 ? 'run' : 'runs'} moved from host "${from}" to "${to}"` +
        (files === 'lost' ? ' (files declared lost)' : '') +
        (report.failed.length > 0 ? `, ${report.failed.length} not moved` : '') +
        `; ${report.elsewhere} running elsewhere (move ${report.moveId})`,
    );
    return report.failed.length > 0 ? EXIT.error : EXIT.ok;
  });
}
