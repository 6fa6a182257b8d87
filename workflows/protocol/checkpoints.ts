// Fork and rewind in a session's protocol (docs/fork-and-rewind.md): the `checkpoints`
// option, the fork point a fork is started with, the `rewind` update (a human's: proven by
// the approver codec, shared/approver-proof.ts) and the `checkpoints` query a client forks
// from. Types are the schemas' (z.input / z.output).
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { lazySchema } from '../../machines/lazy-schema';
import type { RewoundBranch, TurnCheckpoint } from '../../machines/turn-checkpoints';
import type { PolicyConfig } from '../../machines/policy/config';
import { positiveInt } from './option-fields';

/** `checkpoints: true` or its limits (machines/checkpoint-budget.ts has the defaults). */
export const checkpointsOptionSchema = lazySchema(() =>
  z.union([
    z.boolean(),
    z.strictObject({
      /** A file larger than this is not kept (default 16 MiB). */
      maxFileBytes: positiveInt.optional(),
      /** New content the session's checkpoints may store in all (default 1 GiB). */
      maxBytes: positiveInt.optional(),
      /** A scan stops after this many files: the checkpoint is then incomplete (default 200,000). */
      maxFiles: positiveInt.optional(),
      /** A scan stops after this long (default 120 s). */
      maxScanMs: positiveInt.optional(),
    }),
  ]),
);
export type CheckpointsOption = z.input<typeof checkpointsOptionSchema>;

export const turnCheckpointSchema = lazySchema(() =>
  z.strictObject({
    id: z.string().min(1).max(200),
    turn: z.number().int().nonnegative(),
    turnId: z.string().nullable(),
    at: z.string(),
    head: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
    messages: z.number().int().nonnegative(),
    manifest: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
    changed: z.number().int().nonnegative(),
    removed: z.number().int().nonnegative(),
    skipped: z.array(z.strictObject({ path: z.string(), reason: z.string() })).max(50),
    incomplete: z.string().nullable(),
    error: z.string().nullable(),
  }),
);

/** What a fork is started with: its parent, the turn, and the boundary it starts from. */
export const forkOfSchema = lazySchema(() =>
  z.strictObject({
    sessionId: z.string().min(1),
    turn: z.number().int().nonnegative(),
    checkpoint: turnCheckpointSchema,
    /** The parent's conversation store's identity (the fork's is the same store). */
    storeId: z.string().min(1).optional(),
  }),
);
export type ForkOf = z.input<typeof forkOfSchema>;

/** `rewind`: back to a turn's boundary; `files: false` keeps the workspace as it is. */
export const rewindSchema = lazySchema(() =>
  z.strictObject({
    toTurn: z.number().int().nonnegative(),
    files: z.boolean().optional(),
    /** Who asked; proven by Keel's clients' codec (shared/approver-proof.ts), never taken on its word. */
    approver: z.string().max(200).optional(),
    proven: z.boolean().optional(),
    /** What the proof covers besides the approver: `rewind <session> <turn>`. */
    callId: z.string().max(300).optional(),
  }),
);
export type RewindInput = z.input<typeof rewindSchema>;

export interface RewindResult {
  toTurn: number;
  /** Turns set aside (recoverable: fork from any of their checkpoints by id). */
  setAside: number;
  files: { written: number; removed: number; skipped: { path: string; reason: string }[] } | null;
  status: string;
}
export const rewindUpdate = defineUpdate<RewindResult, [RewindInput]>('rewind');

/** `diffTurns`: files added, removed and changed between two turns' checkpoints (read by an activity on the workspace's host). */
export const diffTurnsSchema = lazySchema(() => z.strictObject({ from: z.number().int().nonnegative(), to: z.number().int().nonnegative() }));
export type DiffTurnsInput = z.input<typeof diffTurnsSchema>;
export interface TurnsDiff {
  added: string[];
  removed: string[];
  changed: string[];
}
export const diffTurnsUpdate = defineUpdate<TurnsDiff, [DiffTurnsInput]>('diffTurns');

export interface CheckpointsView {
  enabled: boolean;
  /** The live turn boundaries, oldest first. */
  turns: TurnCheckpoint[];
  /** Branches rewinds set aside. */
  rewound: RewoundBranch[];
  /** New content the checkpoints hold, and the budget. */
  usedBytes: number;
  maxBytes: number;
  /** Where this session was forked from (null: not a fork). */
  forkOf: { sessionId: string; turn: number } | null;
  /** A checkpoint or a rewind is being written now. */
  busy: boolean;
  /** What a fork is started with: this session's options and its effective policy. */
  base: { options: Record<string, unknown>; policy: PolicyConfig | null; storeId: string | null };
}
export const checkpointsQuery = defineQuery<CheckpointsView>('checkpoints');

/** The fork request a client makes: a turn of the session's, or any checkpoint by id. */
export const forkRequestSchema = lazySchema(() =>
  z.strictObject({
    atTurn: z.number().int().nonnegative().optional(),
    checkpointId: z.string().min(1).max(200).optional(),
    /** The fork's workspace (absolute, new or empty); default beside the parent's. */
    workspace: z.string().min(1).optional(),
    id: z.string().min(1).max(200).optional(),
  }),
);
export type ForkRequest = z.input<typeof forkRequestSchema>;
