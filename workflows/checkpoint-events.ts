// What the event log says about workspace checkpoints, forks and rewinds
// (workflows/session-checkpoints.ts; docs/fork-and-rewind.md).

/** A turn boundary's checkpoint was written: what changed, and what could not be kept and why. */
export interface CheckpointRecordedEvent {
  kind: 'checkpoint.recorded';
  turn: number;
  checkpointId: string;
  files: number;
  changed: number;
  removed: number;
  storedBytes: number;
  skipped: { path: string; reason: string }[];
  incomplete: string | null;
}

/** A boundary without a checkpoint (the store or the workspace failed): a fork or rewind to it is refused with this reason. */
export interface CheckpointFailedEvent {
  kind: 'checkpoint.failed';
  turn: number;
  error: string;
}

/** This session was forked from another's turn: its workspace was laid out from that checkpoint. */
export interface SessionForkedEvent {
  kind: 'session.forked';
  fromSession: string;
  turn: number;
  written: number;
  skipped: { path: string; reason: string }[];
}

/** A human rewound the session: later turns set aside (recoverable), files restored or not. */
export interface SessionRewoundEvent {
  kind: 'session.rewound';
  toTurn: number;
  setAside: number;
  by: string;
  files: { written: number; removed: number; skipped: { path: string; reason: string }[] } | null;
}

/** (goals, docs/fork-and-rewind.md "Goals") */
/** This goal was forked from another's point: its workspace was laid out from that checkpoint. */
export interface GoalForkedEvent {
  kind: 'goal.forked';
  fromGoal: string;
  point: string;
  kept: string[];
  written: number;
  skipped: { path: string; reason: string }[];
}

export type CheckpointLogEvent = CheckpointRecordedEvent | CheckpointFailedEvent | SessionForkedEvent | SessionRewoundEvent;
