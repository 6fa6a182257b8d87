// `keel session fork|rewind|checkpoints|diff`: fork and rewind from the command line
// (docs/fork-and-rewind.md). A rewind from here is a human's: this client's codec proves it.
import { diffCheckpoints } from '../../activities/workspace-checkpoint';
import { pickCheckpoint } from '../../machines/turn-checkpoints';
import { CheckpointError } from '../checkpoints';
import { CliExit, withClient } from './common';
import { EXIT } from './output';

export interface ForkCommandOptions {
  at?: string;
  checkpoint?: string;
  workspace?: string;
  id?: string;
  json?: boolean;
}

const turnArg = (value: string | undefined, flag: string): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new CliExit(EXIT.usage, `${flag}: a turn number (0 is before the first turn), not ${JSON.stringify(value)}`);
  return Number(value);
};

/** A refused fork or rewind exits as a refused control does. */
const refused = (error: unknown): never => {
  if (error instanceof CheckpointError) throw new CliExit(EXIT.rejected, error.message);
  throw error;
};

export function forkCommand(id: string, o: ForkCommandOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const atTurn = turnArg(o.at, '--at');
    if ((atTurn === undefined) === (o.checkpoint === undefined)) throw new CliExit(EXIT.usage, 'name the turn to fork at: --at N (or --checkpoint ID)');
    const fork = await keel
      .forkSession(id, { ...(atTurn !== undefined ? { atTurn } : {}), ...(o.checkpoint !== undefined ? { checkpointId: o.checkpoint } : {}), ...(o.workspace ? { workspace: o.workspace } : {}), ...(o.id ? { id: o.id } : {}) })
      .catch(refused);
    if (out.json) out.emit({ id: fork.id, workspace: fork.workspace, forkOf: fork.forkOf });
    else out.line(`${fork.id}: forked from ${fork.forkOf.sessionId} at turn ${fork.forkOf.turn}, workspace ${fork.workspace}`);
  });
}

export function rewindCommand(id: string, o: { to?: string; files?: boolean; json?: boolean }): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const toTurn = turnArg(o.to, '--to');
    if (toTurn === undefined) throw new CliExit(EXIT.usage, 'name the turn to rewind to: --to N');
    const r = await keel.getSession(id).rewind(toTurn, { files: o.files !== false, approver: `${process.env.USER ?? 'someone'} (CLI)` });
    if (out.json) out.emit(r);
    else {
      const files = r.files === null ? 'files left as they are' : `${r.files.written} files restored, ${r.files.removed} removed${r.files.skipped.length > 0 ? `; not restored: ${r.files.skipped.map((s) => s.reason).join('; ')}` : ''}`;
      out.line(`${id}: rewound to turn ${r.toTurn}; ${r.setAside} later turns set aside (fork from them by checkpoint id); ${files}`);
    }
  });
}

export function checkpointsCommand(id: string, o: { json?: boolean }): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const view = await keel.getSession(id).checkpoints().catch(refused);
    if (out.json) return void out.emit(view);
    if (view.forkOf !== null) out.line(`forked from ${view.forkOf.sessionId} at turn ${view.forkOf.turn}`);
    for (const c of view.turns) {
      const state = c.manifest === null ? `no checkpoint: ${c.error ?? ''}` : `${c.changed} changed, ${c.removed} removed${c.skipped.length > 0 ? `, ${c.skipped.length} not kept` : ''}${c.incomplete ? ' (incomplete)' : ''}`;
      out.line(`turn ${c.turn}  ${c.id}  ${c.at}  ${c.messages} messages  ${state}`);
    }
    for (const r of view.rewound) out.line(`set aside by a rewind to turn ${r.toTurn} (${r.by}, ${r.at}): ${r.checkpoints.map((c) => `turn ${c.turn} ${c.id}`).join(', ')}`);
    out.line(`checkpoints hold ${(view.usedBytes / 1024 / 1024).toFixed(1)} of ${(view.maxBytes / 1024 / 1024).toFixed(0)} MiB`);
  });
}

/** Files added, removed and changed between two turns: read from the session's store by this process (it must reach it). */
export function diffCommand(id: string, from: string, to: string, o: { json?: boolean }): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    const view = await keel.getSession(id).checkpoints().catch(refused);
    const at = (turn: string, flag: string) => {
      const picked = pickCheckpoint(view.turns, view.rewound, { turn: turnArg(turn, flag) });
      if (!picked.ok) throw new CliExit(EXIT.rejected, picked.message);
      return picked.checkpoint.manifest!;
    };
    const store = String(view.base.options.storeDir);
    const diff = await diffCheckpoints({ store, from: at(from, 'from'), to: at(to, 'to'), ...(view.base.storeId !== null ? { storeId: view.base.storeId } : {}) });
    if (out.json) return void out.emit(diff);
    for (const p of diff.added) out.line(`A ${p}`);
    for (const p of diff.removed) out.line(`D ${p}`);
    for (const p of diff.changed) out.line(`M ${p}`);
  });
}
