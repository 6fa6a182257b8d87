// What workflows tell the worker's telemetry (worker/telemetry.ts) about their event log:
// the activation's events in one sink call (workflows/sink-batches.ts), which the worker
// turns into counters (transitions per machine, approvals) for /metrics. A sink call is not
// a command and leaves no trace in history; it is not made again when a workflow replays.
import { proxySinks, type Sinks } from '@temporalio/workflow';
import { batched } from './sink-batches';

export interface TelemetryEvent {
  /** The event's kind, e.g. `tool.approved`: its prefix names the machine. */
  kind: string;
  /** When the event happened (workflow time, ISO 8601). */
  at: string;
  callId?: string;
}

export interface KeelSinks extends Sinks {
  keelTelemetry: {
    /** The event-log entries of one activation, in order. */
    events(events: TelemetryEvent[]): void;
  };
}

const { keelTelemetry } = proxySinks<KeelSinks>();
const report = batched<TelemetryEvent>((events) => keelTelemetry.events(events));

/** Reports one event-log entry; only its kind, time and call id leave the workflow. */
export function reportEvent(event: { kind: string; callId?: unknown }, at: string): void {
  report({ kind: event.kind, at, ...(typeof event.callId === 'string' ? { callId: event.callId } : {}) });
}
