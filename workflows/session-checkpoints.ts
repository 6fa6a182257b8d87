// A session's workspace checkpoints, fork start and rewind (docs/fork-and-rewind.md), for a
// session started with `checkpoints`. At every turn boundary (turn 0: after setup) the
// workspace's changes and the conversation's head are recorded by one activity on the
// workspace's host (activities/workspace-checkpoint.ts); the turn is reported finished only
// when that is done, so the next turn never changes files before they are recorded, and a
// client whose `send` returned can fork at that turn at once. A fork lays its new workspace
// out before setup; a rewind (a human's update, never the model's) restores files and sets
// the conversation back, keeping the later turns aside. Rules: machines/turn-checkpoints.ts.
import { patched, proxyActivities, setHandler } from '@temporalio/workflow';
import type { CheckpointActivities } from '../activities/workspace-checkpoint';
import { DEFAULT_CHECKPOINT_LIMITS, type CheckpointLimits } from '../machines/checkpoint-budget';
import { bounded, MAX_LIVE_CHECKPOINTS, MAX_REWOUND_BRANCHES, pickCheckpoint, rewindList, rewindRefusal, type CheckpointCarry, type RewoundBranch, type TurnCheckpoint } from '../machines/turn-checkpoints';
import type { Message } from '../machines/index';
import type { PolicyConfig } from '../machines/policy';
import type { CheckpointLogEvent } from './checkpoint-events';
import { checkpointsQuery, diffTurnsSchema, diffTurnsUpdate, rewindSchema, rewindUpdate, type CheckpointsView, type RewindResult, type TurnsDiff } from './protocol/checkpoints';
import type { ResolvedSessionOptions } from './session-options';
import type { ConversationLog, ConversationSnapshot } from './runtime';
import { failureMessage, parsePayload as parse } from './payloads';
import { refusal, validated } from './refusal';
import { routed, type WorkspaceRoute } from './workspace-host';

const PATCH = 'workspace-checkpoints';
/** Messages a fork's transcript starts with (older ones are in the store). */
const FORK_TAIL = 40;

export interface SessionCheckpointsHost {
  options: ResolvedSessionOptions;
  conversation: ConversationLog;
  route: () => WorkspaceRoute | null;
  storeId: () => string | undefined;
  policy: () => PolicyConfig | null;
  now: () => number;
  post: (work: () => void) => void;
  publish: (event: CheckpointLogEvent) => void;
  status: () => string;
  turnRunning: () => boolean;
}

/** The conversation a fork starts with: its parent's at the fork point, by reference. */
export function forkConversation(options: ResolvedSessionOptions): ConversationSnapshot | undefined {
  const at = options.forkOf?.checkpoint;
  return at === undefined ? undefined : { head: at.head, pending: [], total: at.messages, tail: [] };
}

export function limitsOf(option: ResolvedSessionOptions['checkpoints']): CheckpointLimits {
  return typeof option === 'object' ? { ...DEFAULT_CHECKPOINT_LIMITS, ...Object.fromEntries(Object.entries(option).filter(([, v]) => v !== undefined)) } : DEFAULT_CHECKPOINT_LIMITS;
}

export class SessionCheckpoints {
  readonly enabled: boolean;
  private turns: TurnCheckpoint[];
  private rewound: RewoundBranch[];
  private usedBytes: number;
  private seq: number;
  private running = 0;
  private waiters: (() => void)[] = [];
  private readonly limits: CheckpointLimits;

  constructor(
    private readonly host: SessionCheckpointsHost,
    carry: CheckpointCarry | undefined,
    private readonly fresh: boolean,
  ) {
    const option = host.options.checkpoints;
    this.enabled = option !== undefined && option !== false;
    this.limits = limitsOf(option);
    const forkPoint = host.options.forkOf?.checkpoint;
    this.turns = carry?.turns ?? (forkPoint !== undefined ? [{ ...forkPoint, id: 'fork-point', turnId: null }] : []);
    this.rewound = carry?.rewound ?? [];
    this.usedBytes = carry?.usedBytes ?? 0;
    this.seq = carry?.seq ?? 0;
    if (this.enabled) {
      setHandler(checkpointsQuery, () => this.view());
      setHandler(rewindUpdate, (raw) => this.rewind(raw), { validator: (raw) => this.validateRewind(raw) });
      // Read-only, but the store is the workspace host's to read: an activity there (history
      // gets its events only when someone asks; no patch: old histories never called it).
      setHandler(diffTurnsUpdate, (raw) => this.diff(raw), { validator: (raw) => this.validateDiff(raw) });
    }
  }

  /** A checkpoint or rewind is being written: a turn must not start, the run must not continue as new. */
  get busy(): boolean {
    return this.running > 0;
  }

  /** Runs `work` once nothing is being written (at once if nothing is). */
  whenIdle(work: () => void): void {
    if (this.running === 0) work();
    else this.waiters.push(work);
  }

  private begin(): void {
    this.running++;
  }

  private end(): void {
    this.running--;
    if (this.running > 0) return;
    const waiting = this.waiters;
    this.waiters = [];
    for (const work of waiting) work();
  }

  private activities(timeout: string) {
    return proxyActivities<CheckpointActivities>({ startToCloseTimeout: timeout, heartbeatTimeout: '60 seconds', retry: { maximumAttempts: 3 }, ...routed(this.host.route()) });
  }

  carry(): CheckpointCarry | undefined {
    return this.enabled ? { turns: this.turns, rewound: this.rewound, usedBytes: this.usedBytes, seq: this.seq } : undefined;
  }

  /** A fork's first run lays its workspace out before setup; null when there is nothing to do. */
  forkRestore(): Promise<void> | null {
    const forkOf = this.host.options.forkOf;
    if (!this.enabled || !this.fresh || forkOf === undefined || forkOf.checkpoint.manifest === null) return null;
    patched(PATCH);
    this.begin();
    const { restoreWorkspace } = this.activities('30 minutes');
    return restoreWorkspace({
      store: this.host.options.storeDir,
      ...(forkOf.storeId !== undefined ? { storeId: forkOf.storeId } : {}),
      workspace: this.host.options.workspace,
      manifest: forkOf.checkpoint.manifest,
      mode: 'fresh',
      conversation: { head: forkOf.checkpoint.head, tailMessages: FORK_TAIL },
    })
      .then((r) =>
        this.host.post(() => {
          this.host.conversation.rewindTo(forkOf.checkpoint.head, forkOf.checkpoint.messages, (r.tail ?? []) as Message[]);
          this.host.publish({ kind: 'session.forked', fromSession: forkOf.sessionId, turn: forkOf.turn, written: r.written, skipped: r.skipped });
        }),
      )
      .finally(() => this.host.post(() => this.end()));
  }

  /** Turn 0's checkpoint: the workspace as the session found it (not for a fork, which starts from its fork point). */
  baseline(): void {
    if (!this.enabled || !this.fresh || this.host.options.forkOf !== undefined) return;
    patched(PATCH);
    this.record(null, () => {});
  }

  /** A turn ended: its checkpoint is written, then `done` reports the turn finished. */
  afterTurn(turnId: string, done: () => void): void {
    if (!this.enabled) return done();
    this.record(turnId, done);
  }

  private record(turnId: string | null, done: () => void): void {
    const live = this.turns.at(-1);
    const turn = turnId === null ? 0 : (live?.turn ?? 0) + 1;
    const previous = [...this.turns].reverse().find((c) => c.manifest !== null)?.manifest ?? null;
    const { head, append } = this.host.conversation.outgoing();
    const storeId = this.host.storeId();
    this.begin();
    const id = `c${++this.seq}`;
    const at = new Date(this.host.now()).toISOString();
    const base = { id, turn, turnId, at };
    this.activities('30 minutes')
      .checkpointWorkspace({
        store: this.host.options.storeDir,
        ...(storeId !== undefined ? { storeId } : {}),
        workspace: this.host.options.workspace,
        previous,
        conversation: { head, append },
        limits: this.limits,
        usedBytes: this.usedBytes,
      })
      .then(
        (r) =>
          this.host.post(() => {
            this.host.conversation.stored(r.head, append.length);
            this.usedBytes += r.storedBytes;
            this.push({ ...base, head: r.head, messages: this.host.conversation.total, manifest: r.manifest, changed: r.changed, removed: r.removed, skipped: r.skipped, incomplete: r.incomplete, error: null });
            this.host.publish({ kind: 'checkpoint.recorded', turn, checkpointId: id, files: r.files, changed: r.changed, removed: r.removed, storedBytes: r.storedBytes, skipped: r.skipped, incomplete: r.incomplete });
          }),
        (error: unknown) =>
          this.host.post(() => {
            // The turn is not held back by a checkpoint that could not be written: the boundary says why it has none.
            const message = failureMessage(error);
            this.push({ ...base, head, messages: this.host.conversation.total, manifest: null, changed: 0, removed: 0, skipped: [], incomplete: null, error: message });
            this.host.publish({ kind: 'checkpoint.failed', turn, error: message });
          }),
      )
      .finally(() =>
        this.host.post(() => {
          done();
          this.end();
        }),
      );
  }

  private push(entry: TurnCheckpoint): void {
    this.turns = bounded([...this.turns, entry], MAX_LIVE_CHECKPOINTS);
  }

  private validateRewind(raw: unknown): void {
    const input = validated(() => parse(rewindSchema, raw, 'rewind'));
    const refused = rewindRefusal(
      { toTurn: input.toTurn, proven: input.proven === true, approver: input.approver ?? null },
      { turnRunning: this.host.turnRunning(), busy: this.busy, status: this.host.status(), enabled: this.enabled },
    );
    if (refused !== null) throw refusal(refused.code, refused.message);
    const picked = pickCheckpoint(this.turns, [], { turn: input.toTurn });
    if (!picked.ok) throw refusal(picked.code, picked.message);
  }

  private async rewind(raw: unknown): Promise<RewindResult> {
    const input = parse(rewindSchema, raw, 'rewind');
    // The validator does not run on replay, and a rewind must not land where it was refused.
    const picked = pickCheckpoint(this.turns, [], { turn: input.toTurn });
    if (!picked.ok || input.proven !== true) throw refusal(picked.ok ? 'needs_human' : picked.code, picked.ok ? 'a rewind needs a human' : picked.message);
    const target = picked.checkpoint;
    this.begin();
    try {
      let files: RewindResult['files'] = null;
      if (input.files !== false) {
        const storeId = this.host.storeId();
        const r = await this.activities('30 minutes').restoreWorkspace({
          store: this.host.options.storeDir,
          ...(storeId !== undefined ? { storeId } : {}),
          workspace: this.host.options.workspace,
          manifest: target.manifest!,
          mode: 'in_place',
          conversation: { head: target.head, tailMessages: FORK_TAIL },
        });
        files = { written: r.written, removed: r.removed, skipped: r.skipped };
        this.host.conversation.rewindTo(target.head, target.messages, (r.tail ?? []) as Message[]);
      } else this.host.conversation.rewindTo(target.head, target.messages);
      const { kept, dropped } = rewindList(this.turns, input.toTurn);
      const by = input.approver ?? 'a human';
      this.turns = kept;
      if (dropped.length > 0) this.rewound = bounded([...this.rewound, { at: new Date(this.host.now()).toISOString(), toTurn: input.toTurn, by, checkpoints: dropped }], MAX_REWOUND_BRANCHES);
      this.host.publish({ kind: 'session.rewound', toTurn: input.toTurn, setAside: dropped.length, by, files });
      return { toTurn: input.toTurn, setAside: dropped.length, files, status: this.host.status() };
    } finally {
      this.host.post(() => this.end());
    }
  }

  private pickBoth(raw: unknown): { from: string; to: string } {
    const input = parse(diffTurnsSchema, raw, 'diffTurns');
    const at = (turn: number) => {
      const picked = pickCheckpoint(this.turns, this.rewound, { turn });
      if (!picked.ok) throw refusal(picked.code, picked.message);
      return picked.checkpoint.manifest!;
    };
    return { from: at(input.from), to: at(input.to) };
  }

  private validateDiff(raw: unknown): void {
    validated(() => this.pickBoth(raw));
  }

  private async diff(raw: unknown): Promise<TurnsDiff> {
    const { from, to } = this.pickBoth(raw);
    const storeId = this.host.storeId();
    return this.activities('5 minutes').diffCheckpoints({ store: this.host.options.storeDir, ...(storeId !== undefined ? { storeId } : {}), from, to });
  }

  view(): CheckpointsView {
    const { forkOf, ...options } = this.host.options;
    return {
      enabled: this.enabled,
      turns: this.turns,
      rewound: this.rewound,
      usedBytes: this.usedBytes,
      maxBytes: this.limits.maxBytes,
      forkOf: forkOf === undefined ? null : { sessionId: forkOf.sessionId, turn: forkOf.turn },
      busy: this.busy,
      base: { options, policy: this.host.policy(), storeId: this.host.storeId() ?? null },
    };
  }
}
