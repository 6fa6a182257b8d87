// History events read for what they are: a type's name, and a short note of what the event was
// for (the activity, signal, update, marker or search attributes it names). Shared by the
// history traces (bench/history-trace.ts, bench/sub-agents.ts).
import proto from '@temporalio/proto';

const EVENT_TYPES = proto.temporal.api.enums.v1.EventType as unknown as Record<number, string>;

export type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

export function eventTypeName(type: number): string {
  return (EVENT_TYPES[type] ?? String(type)).replace(/^EVENT_TYPE_/, '');
}

/** The event's own note: activity type and id, signal or update name, marker (patch id), search attributes. */
export function eventNote(event: HistoryEvent): string {
  const a = (key: string) => (event as unknown as Record<string, Record<string, unknown> | null | undefined>)[key];
  const scheduled = a('activityTaskScheduledEventAttributes');
  if (scheduled) return ` ${(scheduled.activityType as { name?: string }).name} (${scheduled.activityId as string})`;
  const signaled = a('workflowExecutionSignaledEventAttributes');
  if (signaled) return ` ${signaled.signalName as string}`;
  const sent = a('signalExternalWorkflowExecutionInitiatedEventAttributes');
  if (sent) return ` ${sent.signalName as string}`;
  const accepted = a('workflowExecutionUpdateAcceptedEventAttributes');
  if (accepted) return ` ${(accepted.acceptedRequest as { input?: { name?: string } })?.input?.name ?? ''}`;
  const marker = a('markerRecordedEventAttributes');
  if (marker) {
    const details = marker.details as Record<string, { payloads?: Array<{ data?: Uint8Array }> }> | undefined;
    const id = details?.patch_id?.payloads?.[0]?.data;
    return ` ${marker.markerName as string}${id ? ` ${Buffer.from(id).toString()}` : ''}`;
  }
  const upsert = a('upsertWorkflowSearchAttributesEventAttributes');
  if (upsert) {
    const fields = (upsert.searchAttributes as { indexedFields?: Record<string, { data?: Uint8Array }> })?.indexedFields ?? {};
    return ` ${Object.entries(fields).map(([k, v]) => `${k}=${v.data ? Buffer.from(v.data).toString() : ''}`).join(' ')}`;
  }
  const child = a('startChildWorkflowExecutionInitiatedEventAttributes');
  if (child) return ` ${(child.workflowType as { name?: string }).name} ${child.workflowId as string}`;
  return '';
}

/** What one workflow's history holds, in the kinds that cost a step something. */
export interface HistoryCounts {
  events: number;
  workflowTasks: number;
  activities: number;
  localActivities: number;
  /** Patch markers (patched()/deprecatePatch: one per patch id per run). */
  patchMarkers: number;
  signalsReceived: number;
  signalsSent: number;
  updates: number;
  searchAttributeUpserts: number;
  childrenStarted: number;
  timers: number;
}

export function countHistory(events: readonly HistoryEvent[]): HistoryCounts {
  const c: HistoryCounts = { events: events.length, workflowTasks: 0, activities: 0, localActivities: 0, patchMarkers: 0, signalsReceived: 0, signalsSent: 0, updates: 0, searchAttributeUpserts: 0, childrenStarted: 0, timers: 0 };
  for (const e of events) {
    switch (eventTypeName(Number(e.eventType))) {
      case 'WORKFLOW_TASK_SCHEDULED':
        c.workflowTasks++;
        break;
      case 'ACTIVITY_TASK_SCHEDULED':
        c.activities++;
        break;
      case 'MARKER_RECORDED':
        if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') c.localActivities++;
        else c.patchMarkers++;
        break;
      case 'WORKFLOW_EXECUTION_SIGNALED':
        c.signalsReceived++;
        break;
      case 'SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED':
        c.signalsSent++;
        break;
      case 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED':
        c.updates++;
        break;
      case 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES':
        c.searchAttributeUpserts++;
        break;
      case 'START_CHILD_WORKFLOW_EXECUTION_INITIATED':
        c.childrenStarted++;
        break;
      case 'TIMER_STARTED':
        c.timers++;
        break;
    }
  }
  return c;
}
