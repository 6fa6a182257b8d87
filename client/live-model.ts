// The model's text while a call streams, read from the server alone: the model activity puts
// the text so far in its heartbeats (activities/llm-deltas.ts LiveModelText), and
// DescribeWorkflowExecution returns a pending activity's last heartbeat without a worker. The
// same text reaches the workflow's stream later (a signal every ~150 ms of a long answer, the
// rest with the call's result): that copy is the durable one, with offsets; this one is only
// sooner. `LiveOverlay` lets a reader show each character once, whichever copy brings it first.
import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import { z } from 'zod';
import type { LiveModelText, ModelStreamEvent } from '../shared/model-stream';
import { MODEL_TOPIC } from '../workflows/protocol/topics';

/** The activity type whose heartbeats carry live text. */
const MODEL_ACTIVITY = 'callModel';
/** A describe nobody answered frees its readers after this long. */
const DESCRIBE_DEADLINE_MS = 5_000;
/** Stopped calls a reader remembers (a call's live text can only come while it runs). */
const STOPPED_KEPT = 64;
/** Readers of one workflow in this process within this long share one describe. */
const SHARE_MS = 20;

/** Heartbeat details are anyone's who can heartbeat the activity: read as hostile. */
const liveSchema = z.object({
  callId: z.string().max(500).nullable(),
  attempt: z.number().int().positive(),
  blocks: z
    .array(z.object({ index: z.number().int().nonnegative(), block: z.enum(['text', 'thinking']), length: z.number().int().nonnegative(), tail: z.string() }))
    .max(1_000),
});
const detailsSchema = z.looseObject({ live: liveSchema.optional() });

/** What one describe says of the workflow's model calls. */
export interface LiveRead {
  /** The live text of each call in flight that has heartbeated some. */
  calls: LiveModelText[];
  /**
   * Calls in flight with no text on the server yet (scheduled, waiting for the API's first
   * token): a reader asks again at its pace rather than read the stream (their text is not there either).
   */
  waiting: number;
}

const NOTHING: LiveRead = { calls: [], waiting: 0 };

const shared = new WeakMap<Client, Map<string, { at: number; read: Promise<LiveRead> }>>();

/** The live text of every model call the workflow has in flight (none when it has none, or on any error). */
export function readLiveModelText(client: Client, workflowId: string): Promise<LiveRead> {
  let byWorkflow = shared.get(client);
  if (!byWorkflow) shared.set(client, (byWorkflow = new Map<string, { at: number; read: Promise<LiveRead> }>()));
  const recent = byWorkflow.get(workflowId);
  if (recent && Date.now() - recent.at < SHARE_MS) return recent.read;
  const read = describeLive(client, workflowId);
  const entry = { at: Date.now(), read };
  byWorkflow.set(workflowId, entry);
  const map = byWorkflow;
  void read.finally(() => setTimeout(() => map.get(workflowId) === entry && map.delete(workflowId), SHARE_MS));
  return read;
}

async function describeLive(client: Client, workflowId: string): Promise<LiveRead> {
  try {
    const described = await client.connection.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () =>
      client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId } }),
    );
    const calls: LiveModelText[] = [];
    let waiting = 0;
    for (const activity of described.pendingActivities ?? []) {
      if (activity.activityType?.name !== MODEL_ACTIVITY) continue;
      const details = activity.heartbeatDetails?.payloads?.length
        ? detailsSchema.safeParse(await decodeFromPayloadsAtIndex(client.options.loadedDataConverter, 0, activity.heartbeatDetails.payloads))
        : null;
      if (details?.success && details.data.live) calls.push(details.data.live);
      else waiting++;
    }
    return { calls, waiting };
  } catch {
    // Live text is only sooner: a reader that cannot have it waits for the stream.
    return NOTHING;
  }
}

type ModelItem = { topic: typeof MODEL_TOPIC; offset: number; data: ModelStreamEvent };

/**
 * One reader's view of a call's text from both copies: every character once, in order. Live
 * deltas have offset -1 (they are not in the stream: SSE sends them without an id, and a reader
 * that resumes by offset reads the durable copy again). Every stream item still comes, with its
 * offset, so a resumed reader misses nothing: a delta cut to what was not shown live (`''`
 * when all of it was), the markers as they are. Live text comes as deltas only: a delta of a
 * new attempt may come before that attempt's `retry` marker, and a call's text before its
 * `start` (readers key a call's text by call and attempt).
 */
export class LiveOverlay {
  /** Characters shown, per call, attempt and block. */
  private readonly shown = new Map<string, number>();
  /** Characters the durable copy has brought, per call, attempt and block. */
  private readonly durable = new Map<string, number>();
  /** Calls whose stop marker passed (the newest few): a describe that left before it says nothing new. */
  private readonly stopped = new Set<string>();

  /** A stream item, its text cut to what was not shown yet. */
  durableItem<T extends { topic: string; offset: number; data: unknown }>(item: T): T {
    if (item.topic !== MODEL_TOPIC) return item;
    const data = item.data as ModelStreamEvent;
    const call = `${data.callId}|${data.attempt}`;
    switch (data.kind) {
      case 'retry':
      case 'start':
        return item;
      case 'delta': {
        const key = `${call}|${data.index}`;
        const before = this.durable.get(key) ?? 0;
        const after = before + data.text.length;
        this.durable.set(key, after);
        const shown = this.shown.get(key) ?? 0;
        if (before >= shown) {
          this.shown.set(key, after);
          return item;
        }
        this.shown.set(key, Math.max(shown, after));
        return { ...item, data: { ...data, text: data.text.slice(Math.min(shown, after) - before) } };
      }
      case 'stop':
        this.forget(call);
        return item;
    }
  }

  /** What the live text adds to what was shown: each block's new characters. */
  liveItems(calls: readonly LiveModelText[]): ModelItem[] {
    const out: ModelItem[] = [];
    for (const live of calls) {
      const call = `${live.callId}|${live.attempt}`;
      if (this.stopped.has(call)) continue;
      for (const block of [...live.blocks].sort((a, b) => a.index - b.index)) {
        const key = `${call}|${block.index}`;
        const shown = this.shown.get(key) ?? 0;
        const tailStart = block.length - block.tail.length;
        // Nothing new, or a gap this reader fell behind by: the durable copy brings it in order.
        if (block.length <= shown || tailStart > shown) continue;
        this.shown.set(key, block.length);
        out.push({ topic: MODEL_TOPIC, offset: -1, data: { kind: 'delta', callId: live.callId, attempt: live.attempt, index: block.index, block: block.block, text: block.tail.slice(shown - tailStart) } });
      }
    }
    return out;
  }

  /** A call's counts once its stop marker passed: a long-lived reader keeps no state per call. */
  private forget(call: string): void {
    this.stopped.add(call);
    if (this.stopped.size > STOPPED_KEPT) this.stopped.delete(this.stopped.values().next().value!);
    for (const map of [this.shown, this.durable]) for (const key of [...map.keys()]) if (key.startsWith(`${call}|`)) map.delete(key);
  }
}
