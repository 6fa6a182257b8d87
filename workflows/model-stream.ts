// What the model streamed for a call, read back from the workflow's own stream (the model
// activity publishes its deltas on the `model` topic): the text and usage an interrupted
// call had produced so far.
import { defaultPayloadConverter } from '@temporalio/workflow';
import { decodePayloadWire, type WorkflowStream } from '@temporalio/workflow-streams/workflow';
import type { ModelStreamEvent } from '../activities/llm';
import { MODEL_TOPIC } from './definitions';

/** Text the model streamed for one call (its latest attempt). */
export function streamedText(stream: WorkflowStream, activityId: string): string {
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

export function* modelEvents(stream: WorkflowStream): Generator<ModelStreamEvent> {
  for (const item of stream.getState().log) {
    if (item.topic !== MODEL_TOPIC) continue;
    try {
      yield defaultPayloadConverter.fromPayload<ModelStreamEvent>(decodePayloadWire(item.data));
    } catch {
      continue;
    }
  }
}
