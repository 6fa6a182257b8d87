// The workflows' payload converter: the SDK's default one, except that decoding never
// throws. The SDK decodes a signal's arguments before any handler or interceptor runs, and
// a decoding error there fails the workflow task — every later task too, for good (a
// signal sent with `--input-meta encoding=json/protobuf`, or bytes that are not JSON,
// wedged a session until someone reset it). Here such a payload decodes to a marker the
// workflows reject like any other invalid payload: recorded as `event.rejected` for a
// signal, refused for an update, a non-retryable failure for start input.
//
// Registered as the worker's `dataConverter.payloadConverterPath` (worker/worker.ts) and
// bundled into the workflow code (test/helpers/temporal.ts bundles the same way).
import { defaultPayloadConverter, type PayloadConverter } from '@temporalio/workflow';

type Payload = Parameters<PayloadConverter['fromPayload']>[0];

export const UNDECODABLE = '__keelUndecodablePayload';

/** What an undecodable payload becomes: never valid input for any schema of ours. */
export interface UndecodablePayload {
  [UNDECODABLE]: true;
  encoding: string;
  reason: string;
}

export function isUndecodable(value: unknown): value is UndecodablePayload {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[UNDECODABLE] === true;
}

class TolerantPayloadConverter implements PayloadConverter {
  private readonly inner = defaultPayloadConverter;

  toPayload<T>(value: T): Payload {
    return this.inner.toPayload(value);
  }

  fromPayload<T>(payload: Payload): T {
    try {
      return this.inner.fromPayload<T>(payload);
    } catch (error) {
      let encoding = '(none)';
      try {
        const raw = payload.metadata?.encoding;
        // Encoding names are ASCII; anything else is shown as `?` (no decoder needed here).
        if (raw) encoding = Array.from(raw.slice(0, 100), (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : '?')).join('');
      } catch {
        encoding = '(unreadable)';
      }
      const reason = (error instanceof Error ? error.message : String(error)).slice(0, 300);
      const marker: UndecodablePayload = { [UNDECODABLE]: true, encoding, reason };
      return marker as T;
    }
  }
}

export const payloadConverter: PayloadConverter = new TolerantPayloadConverter();

