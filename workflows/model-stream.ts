// The workflow's `model` topic: what the model streamed for a call, read back (the text and
// usage an interrupted call had produced so far), and the end of a call's stream that came
// with its result instead of a signal (activities/llm-deltas.ts), appended.
import type { ModelStreamEvent } from '../activities/llm';
import { MODEL_TOPIC } from './definitions';
import type { KeelStream } from './keel-stream';

/**
 * Appends the end of a call's stream that its result carried, after what the activity signalled.
 * Stream items are workflow state, not commands: replay is unchanged, and results recorded before
 * the tail existed carry none.
 */
export function appendStreamTail(stream: KeelStream, tail: readonly ModelStreamEvent[] | undefined): void {
  if (tail === undefined || tail.length === 0) return;
  const topic = stream.topic<ModelStreamEvent>(MODEL_TOPIC);
  for (const event of tail) topic.publish(event);
}

/** Text the model streamed for one call (its latest attempt). */
export function streamedText(stream: KeelStream, activityId: string): string {
  let attempt = -1;
  let text = '';
  for (const event of modelEvents(stream)) {
    if (event.callId !== activityId) continue;
    if (event.attempt !== attempt) {
      if (event.attempt < attempt) continue;
      attempt = event.attempt;
      text = '';
    }
    if (event.kind === 'delta' && event.block === 'text') text += event.text;
  }
  return text;
}

export function modelEvents(stream: KeelStream): Generator<ModelStreamEvent> {
  return stream.values<ModelStreamEvent>(MODEL_TOPIC);
}
