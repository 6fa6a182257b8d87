// How often a streaming model call may signal its deltas to its workflow, shared by all the
// calls of one worker. Each stream signal is a workflow task on this worker and four history
// events on the server (~18 ms of the server's CPU, bench/delta-channel.ts): fifty calls each
// signalling every 150 ms made ~330 workflow tasks a second, which took both cores of the
// bench's machine and left every `send()` and `interrupt()` waiting behind them (p99 2.3–3.5 s,
// docs/performance.md, issue 53's twelfth part). So the worker has a budget of signals a second,
// and each call streaming now gets its share: a few calls keep the 150 ms pace, fifty wait
// ~2 s between sends. What a late signal costs is little: a reader this worker knows of sees
// the text live from the call's heartbeats (activities/llm.ts), whose pace this does not change,
// and the call's result still carries whatever was held (its `streamTail`).
export interface StreamPaceOptions {
  /** Stream signals a second this worker's calls may send between them. */
  signalsPerSecond: number;
  /** The shortest wait between a call's sends (its pace when few calls stream). */
  minIntervalMs: number;
  /** The longest: past `signalsPerSecond × maxIntervalMs / 1000` calls the budget gives way to it. */
  maxIntervalMs: number;
}

export class StreamPace {
  private streaming = 0;

  constructor(private readonly options: StreamPaceOptions) {
    if (!(options.signalsPerSecond > 0) || !(options.minIntervalMs > 0) || !(options.maxIntervalMs >= options.minIntervalMs)) {
      throw new RangeError(`stream pace: signalsPerSecond and minIntervalMs must be > 0 and maxIntervalMs ≥ minIntervalMs (got ${JSON.stringify(options)})`);
    }
  }

  /** A call streams from now until it calls the function returned (once is enough; more are ignored). */
  join(): () => void {
    this.streaming++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.streaming--;
    };
  }

  /** How long a call waits between its sends now: its share of the budget, within the bounds. */
  intervalMs(): number {
    const share = (this.streaming * 1_000) / this.options.signalsPerSecond;
    return Math.min(this.options.maxIntervalMs, Math.max(this.options.minIntervalMs, share));
  }
}
