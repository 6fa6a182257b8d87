// What a checkpoint keeps of a changed file: its content, unless the file is over the limit
// per file or would take the session past its checkpoint budget. Either way the checkpoint
// says so by path, with a message a person reads when a fork or rewind cannot bring the
// file back. Pure; the limits are the session's options (workflows/protocol/checkpoints.ts).

export interface CheckpointLimits {
  /** A file larger than this is not kept (default 16 MiB). */
  maxFileBytes: number;
  /** New content a session may store in checkpoints, in all (default 1 GiB). */
  maxBytes: number;
  /** A scan stops after this many files (default 200,000): the checkpoint is then incomplete. */
  maxFiles: number;
  /** A scan stops after this long (default 120 s): the checkpoint is then incomplete. */
  maxScanMs: number;
}

export const DEFAULT_CHECKPOINT_LIMITS: CheckpointLimits = {
  maxFileBytes: 16 * 1024 * 1024,
  maxBytes: 1024 * 1024 * 1024,
  maxFiles: 200_000,
  maxScanMs: 120_000,
};

const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MiB`;

export type KeepDecision = { keep: true } | { keep: false; reason: string };

/**
 * Whether a changed file's content is stored. `alreadyStored`: the blob is in the store
 * (the same content elsewhere or earlier): it costs nothing and is always kept.
 */
export function keepFile(path: string, size: number, limits: CheckpointLimits, usedBytes: number, alreadyStored: boolean): KeepDecision {
  if (size > limits.maxFileBytes) {
    return { keep: false, reason: `${path}: ${mib(size)} is over the checkpoint limit of ${mib(limits.maxFileBytes)} per file (checkpoints.maxFileBytes); not kept, so a fork or rewind to this turn cannot bring this version back` };
  }
  if (alreadyStored) return { keep: true };
  if (usedBytes + size > limits.maxBytes) {
    return {
      keep: false,
      reason: `${path}: the session's checkpoints already hold ${mib(usedBytes)} of their ${mib(limits.maxBytes)} budget (checkpoints.maxBytes); this version (${mib(size)}) is not kept, so a fork or rewind to this turn cannot bring it back`,
    };
  }
  return { keep: true };
}
