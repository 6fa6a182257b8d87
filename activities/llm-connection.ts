// The state of the model connection, reported in heartbeat details so a stuck call can
// be read off `temporal workflow describe` (pending activity → heartbeat details).
// It mirrors the `stream` machine (machines/stream.ts: disconnected → connecting →
// connected → streaming{bytes} → completed | failed). Once that machine is settled, each
// method here becomes one `streamMachine` event (connect, connected, start_streaming +
// data{bytes}, complete, error) and `stream` in the details becomes the machine's state.

export type ModelConnectionState = 'disconnected' | 'connecting' | 'connected' | 'streaming' | 'completed' | 'failed';

export interface ModelCallHeartbeat {
  stream: {
    status: ModelConnectionState;
    /** Response body bytes received in this attempt. */
    bytes: number;
  };
  /** Stream events received in this attempt. */
  events: number;
  attempt: number;
  requestId: string | null;
}

export class ConnectionProgress {
  private state: ModelConnectionState = 'disconnected';
  private bytes = 0;
  private events = 0;
  private requestId: string | null = null;

  constructor(private readonly attempt: number) {}

  connecting(): void {
    this.state = 'connecting';
  }

  connected(requestId: string | null): void {
    this.state = 'connected';
    this.requestId = requestId;
  }

  received(bytes: number): void {
    this.bytes += bytes;
    if (this.state === 'connected') this.state = 'streaming';
  }

  event(): void {
    this.events += 1;
  }

  completed(): void {
    this.state = 'completed';
  }

  failed(): void {
    this.state = 'failed';
  }

  details(): ModelCallHeartbeat {
    return {
      stream: { status: this.state, bytes: this.bytes },
      events: this.events,
      attempt: this.attempt,
      requestId: this.requestId,
    };
  }
}
