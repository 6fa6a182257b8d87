// A session's turn boundaries: for each finished turn, where its conversation ended in the
// store (head and message count) and the workspace checkpoint taken then. Fork and rewind
// pick one of them. Pure rules: which boundary a fork or a rewind may use, who may rewind,
// and what a rewind keeps aside (the later turns are set aside, never destroyed: their
// conversation and checkpoints stay in the store and can be forked from).

export interface TurnCheckpoint {
  /** Unique in the session (a turn number repeats after a rewind). */
  id: string;
  /** Turns finished in the conversation at this boundary (0: before the first). */
  turn: number;
  /** The turn that ended here (null for turn 0, and for a fork's first boundary it inherited). */
  turnId: string | null;
  at: string;
  /** The conversation's head in the store and its message count. */
  head: string | null;
  messages: number;
  /** The workspace's manifest (null when checkpointing failed: `error` says why). */
  manifest: string | null;
  changed: number;
  removed: number;
  /** Files not kept (too big, over budget, a link out of the workspace), each with its reason. */
  skipped: { path: string; reason: string }[];
  incomplete: string | null;
  error: string | null;
}

/** Later turns a rewind set aside, recoverable by forking from any of their checkpoints. */
export interface RewoundBranch {
  at: string;
  toTurn: number;
  by: string;
  checkpoints: TurnCheckpoint[];
}

/** What a session's run hands the next through continue-as-new (workflows/session-checkpoints.ts). */
export interface CheckpointCarry {
  turns: TurnCheckpoint[];
  rewound: RewoundBranch[];
  usedBytes: number;
  seq: number;
}

export type CheckpointRefusal = { code: string; message: string };
export type Picked = { ok: true; checkpoint: TurnCheckpoint } | ({ ok: false } & CheckpointRefusal);

/**
 * The boundary a fork or rewind names: `atTurn` among the live ones, or any checkpoint by id
 * (one a rewind set aside too). `first`: the session's first boundary (a fork's is its fork point).
 */
export function pickCheckpoint(live: readonly TurnCheckpoint[], rewound: readonly RewoundBranch[], at: { turn?: number | undefined; id?: string | undefined }): Picked {
  const all = [...live, ...rewound.flatMap((r) => r.checkpoints)];
  const found = at.id !== undefined ? all.find((c) => c.id === at.id) : live.find((c) => c.turn === at.turn);
  if (found === undefined) {
    const turns = live.map((c) => c.turn);
    const range = turns.length === 0 ? 'none yet' : `turns ${Math.min(...turns)}–${Math.max(...turns)}`;
    const what = at.id !== undefined ? `checkpoint ${at.id}` : `turn ${at.turn}`;
    const before = at.turn !== undefined && turns.length > 0 && at.turn < Math.min(...turns);
    return {
      ok: false,
      code: 'no_checkpoint',
      message: before ? `${what} is before this session's first checkpoint (turn ${Math.min(...turns)}, where it was forked): fork its parent at that turn instead` : `${what} has no checkpoint (this session has ${range}; a running turn has none until it ends)`,
    };
  }
  if (found.manifest === null) return { ok: false, code: 'checkpoint_failed', message: `turn ${found.turn}'s checkpoint was not recorded: ${found.error ?? 'unknown error'}` };
  return { ok: true, checkpoint: found };
}

export interface RewindRequest {
  toTurn: number;
  /** Set by Keel's clients and checked by the approver codec (shared/approver-proof.ts): false for anything else. */
  proven: boolean;
  approver: string | null;
}

/** Whether a rewind may happen now: only by a human (a proven call), never during a turn. */
export function rewindRefusal(request: RewindRequest, session: { turnRunning: boolean; busy: boolean; status: string; enabled: boolean }): CheckpointRefusal | null {
  if (!session.enabled) return { code: 'checkpoints_off', message: 'this session keeps no checkpoints (start it with checkpoints: true)' };
  if (!request.proven) {
    return {
      code: 'needs_human',
      message: "a rewind needs a human: send it with Keel's API, SDK or CLI (which prove the caller with the approver key); a call from anywhere else — a command the model ran included — is refused",
    };
  }
  if (session.status === 'closed' || session.status === 'failed') return { code: 'ended', message: `the session is ${session.status}` };
  if (session.turnRunning) return { code: 'turn_running', message: 'a turn is running: interrupt it (or wait for it) before rewinding' };
  if (session.busy) return { code: 'busy', message: 'a checkpoint or another rewind is in progress; try again when it ends' };
  return null;
}

/** The live boundaries after rewinding to `toTurn`, and the branch set aside. */
export function rewindList(live: readonly TurnCheckpoint[], toTurn: number): { kept: TurnCheckpoint[]; dropped: TurnCheckpoint[] } {
  return { kept: live.filter((c) => c.turn <= toTurn), dropped: live.filter((c) => c.turn > toTurn) };
}

/** At most this many boundaries are kept in the workflow (newest), and this many rewound branches. */
export const MAX_LIVE_CHECKPOINTS = 1000;
export const MAX_REWOUND_BRANCHES = 20;

export function bounded<T>(list: readonly T[], max: number): T[] {
  return list.length > max ? list.slice(list.length - max) : [...list];
}
