// The state of the model connection, reported in heartbeat details so a stuck call can
// be read off `temporal workflow describe` (pending activity → heartbeat details). The
// `stream` machine (machines/stream.ts: disconnected → connecting → connected →
// streaming{bytes} → completed | failed) holds it: each method here is one of its events,
// and `stream` in the details is the machine's state, as it is.
import { createStream, streamMachine, type StreamEvent, type StreamState } from '../machines/stream';

export type ModelConnectionState = StreamState['status'];

export interface ModelCallHeartbeat {
  /** The stream machine's state for this attempt's connection. */
  stream: StreamState;
  /** Response bytes outside the stream's `streaming` state, which the machine does not count: a
   *  compaction's summary call, an error response's body, a chunk read before the headers were handled. */
  bytesOutsideStream: number;
  /** Stream events received in this attempt. */
  events: number;
  attempt: number;
  requestId: string | null;
}

/** One activity attempt makes one connection: a failed one is retried by the turn, as a new attempt. */
const CONNECTIONS_PER_ATTEMPT = 1;

export class ConnectionProgress {
  private state: StreamState = createStream(CONNECTIONS_PER_ATTEMPT);
  private outside = 0;
  private events = 0;
  private requestId: string | null = null;
  /** Events the machine refused (say, bytes after a failure): counted for diagnosis, never thrown. */
  refused = 0;

  constructor(private readonly attempt: number) {}

  get status(): ModelConnectionState {
    return this.state.status;
  }

  connecting(): void {
    this.apply({ type: 'connect' });
  }

  connected(requestId: string | null): void {
    this.requestId = requestId;
    this.apply({ type: 'connected' });
  }

  received(bytes: number): void {
    if (this.state.status === 'connected') this.apply({ type: 'start_streaming' });
    if (this.state.status === 'streaming') this.apply({ type: 'data', bytes });
    else this.outside += bytes;
  }

  event(): void {
    this.events += 1;
  }

  completed(): void {
    // A whole answer that came before the first counted byte still went through streaming.
    if (this.state.status === 'connected') this.apply({ type: 'start_streaming' });
    this.apply({ type: 'complete' });
  }

  failed(message: string): void {
    // Before the connection opened (bad input, a failed compaction) there is no connection to fail.
    if (this.state.status === 'disconnected') return;
    this.apply({ type: 'error', message });
  }

  details(): ModelCallHeartbeat {
    return { stream: this.state, bytesOutsideStream: this.outside, events: this.events, attempt: this.attempt, requestId: this.requestId };
  }

  private apply(event: StreamEvent): void {
    const result = streamMachine.transition(this.state, event);
    if (result.ok) this.state = result.state;
    else this.refused += 1;
  }
}
