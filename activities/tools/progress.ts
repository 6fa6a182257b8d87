// Progress of long tools. Two channels, both cheap:
//
// - heartbeat details (every tool activity heartbeats; `temporal workflow describe` shows
//   the latest): run_command's output bytes and lines so far (run-command.ts), the bytes
//   and files read_file and grep have read (`progressReporter` here) — no history at all;
// - `tool.progress` events on the calling workflow's stream (topic TOOL_STREAM_TOPIC), sent
//   from the activity the way the model activity sends its deltas (activities/llm-deltas.ts),
//   for people watching. Each is a signal in the workflow's history, so they are rationed
//   (`ToolProgressEvents`): none while a tool is quick (its first ~2 s), then at most one
//   every ~2 s per call — a 5-second command costs two or three.
import { type ToolContext } from './context';
import { type ConnectionRecord } from './network-proxy';

/** The workflow-stream topic tool progress travels on. */
export const TOOL_STREAM_TOPIC = 'tools';

const PROGRESS_EVERY_MS = 250;
/** A tool that finishes sooner publishes nothing. */
export const PROGRESS_EVENTS_AFTER_MS = 2_000;
/** At most one event per call per this interval. */
export const PROGRESS_EVENTS_EVERY_MS = 2_000;

export interface ReadProgress {
  tool: 'read_file' | 'grep';
  bytes: number;
  files: number;
}

/** Heartbeat details of a long read, at most every PROGRESS_EVERY_MS (a grep reads a megabyte chunk in a millisecond). */
export function progressReporter(ctx: ToolContext, tool: ReadProgress['tool'], snapshot: () => { bytes: number; files: number }): () => void {
  let last = 0;
  return () => {
    const now = Date.now();
    if (now - last < PROGRESS_EVERY_MS) return;
    last = now;
    const { bytes, files } = snapshot();
    const details: ReadProgress = { tool, bytes, files };
    ctx.progress(details);
  };
}

/** What a watcher of the workflow's stream gets for a long tool call. */
export interface ToolProgressEvent {
  kind: 'tool.progress';
  callId: string;
  tool: string;
  /** Since the activity attempt started. */
  elapsedMs: number;
  /** Output bytes (run_command) or bytes read (read_file, grep) so far. */
  bytes: number;
  /** Output lines so far (run_command); null for other tools. */
  lines: number | null;
  /** Files read so far (read_file, grep); null for run_command. */
  files: number | null;
  /** A connection Keel's egress proxy allowed or refused for this call (a command's, or an MCP server's during the call). */
  network?: ConnectionRecord;
}

/** Distinct connections (decision, host, port) sent as events per call; repeats and the rest are in the result's log. */
export const MAX_NETWORK_EVENTS = 50;

/** Turns a tool's heartbeat details into rationed `tool.progress` events. */
export class ToolProgressEvents {
  private readonly started: number;
  private last: number | null = null;
  /** Events sent for this call: the history cost of its progress. */
  sent = 0;
  private readonly connections = new Set<string>();
  private figures: Pick<ToolProgressEvent, 'bytes' | 'lines' | 'files'> = { bytes: 0, lines: null, files: null };

  constructor(
    private readonly send: (event: ToolProgressEvent) => void,
    private readonly call: { callId: string; tool: string },
    private readonly now: () => number = Date.now,
  ) {
    this.started = now();
  }

  offer(details: unknown): void {
    const at = this.now();
    const elapsedMs = at - this.started;
    // Every distinct connection is an event at once, not rationed: a person watching sees what
    // the call reached and what was refused as it happens.
    const network = networkOf(details);
    if (network !== null) {
      const key = `${network.decision} ${network.host}:${network.port}`;
      if (this.connections.has(key) || this.connections.size >= MAX_NETWORK_EVENTS) return;
      this.connections.add(key);
      this.sent += 1;
      this.send({ kind: 'tool.progress', ...this.call, elapsedMs, ...this.figures, network });
      return;
    }
    if (elapsedMs < PROGRESS_EVENTS_AFTER_MS) return;
    if (this.last !== null && at - this.last < PROGRESS_EVENTS_EVERY_MS) return;
    const figures = figuresOf(details);
    if (figures === null) return;
    this.figures = figures;
    this.last = at;
    this.sent += 1;
    this.send({ kind: 'tool.progress', ...this.call, elapsedMs, ...figures });
  }
}

function networkOf(details: unknown): ConnectionRecord | null {
  if (typeof details !== 'object' || details === null) return null;
  const n = (details as Record<string, unknown>).network;
  if (typeof n !== 'object' || n === null) return null;
  const r = n as Record<string, unknown>;
  if ((r.decision !== 'allowed' && r.decision !== 'refused') || typeof r.host !== 'string' || typeof r.port !== 'number') return null;
  return {
    host: r.host,
    port: r.port,
    decision: r.decision,
    ...(typeof r.address === 'string' ? { address: r.address } : {}),
    ...(typeof r.reason === 'string' ? { reason: r.reason } : {}),
  };
}

function figuresOf(details: unknown): Pick<ToolProgressEvent, 'bytes' | 'lines' | 'files'> | null {
  if (typeof details !== 'object' || details === null) return null;
  const d = details as Record<string, unknown>;
  if (typeof d.bytes !== 'number') return null;
  return { bytes: d.bytes, lines: typeof d.lines === 'number' ? d.lines : null, files: typeof d.files === 'number' ? d.files : null };
}
