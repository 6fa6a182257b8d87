// What workflows tell the worker's telemetry (worker/telemetry.ts) about their event log:
// one sink call per event, which the worker turns into counters (transitions per machine,
// approvals) for /metrics. A sink call is not a command and leaves no trace in history;
// it is not made again when a workflow replays.
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface TelemetryEvent {
  /** The event's kind, e.g. `tool.approved`: its prefix names the machine. */
  kind: string;
  /** When the event happened (workflow time, ISO 8601). */
  at: string;
  callId?: string;
}

export interface KeelSinks extends Sinks {
  keelTelemetry: {
    event(event: TelemetryEvent): void;
  };
}

const { keelTelemetry } = proxySinks<KeelSinks>();

/** Reports one event-log entry; only its kind, time and call id leave the workflow. */
export function reportEvent(event: { kind: string; callId?: unknown }, at: string): void {
  keelTelemetry.event({ kind: event.kind, at, ...(typeof event.callId === 'string' ? { callId: event.callId } : {}) });
}
