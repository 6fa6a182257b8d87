// A run waiting out its infrastructure (machines/infra-retry.ts decides for how long): the
// tries of one wait, what the run shows meanwhile (the state view's `waiting`, the
// `infra.waiting` event at tries 1, 2, 4, 8…), and `infra.recovered` when the service
// answers again. Durable: the waits are the workflow's timers, so a worker restarted
// while a run waits loses nothing.
import { describeInfraWait, infraWaitDecision, type InfraService, type InfraWait, type InfraWaitDecision } from '../machines/infra-retry';
import type { InfraRecoveredEvent, InfraWaitingEvent } from './log-entries';
import { hasPatch } from './run-format';

/** Runs recorded before transient infrastructure errors were waited out fail as they did. */
export const INFRA_WAIT_PATCH = 'infra-wait-out';

export class InfraWaiter {
  private wait: InfraWait | null = null;

  constructor(
    private readonly host: {
      now(): number;
      emit(event: InfraWaitingEvent | InfraRecoveredEvent): void;
      /** What the run waits for changed (a wait began, ended or was dropped): the KeelWaiting attribute follows. */
      changed?(): void;
    },
    private readonly horizonMs?: number | undefined,
  ) {}

  /** What the run waits for now, in words (null when it waits for nothing). */
  get waiting(): string | null {
    return this.wait === null ? null : describeInfraWait(this.wait);
  }

  get current(): Readonly<InfraWait> | null {
    return this.wait;
  }

  /** Whether this run waits out transient failures (a patch: older histories replay as they ran). */
  static enabled(): boolean {
    return hasPatch(INFRA_WAIT_PATCH);
  }

  /** A try failed transiently: how long until the next, or why not to wait any longer. */
  failed(service: InfraService, target: string, error: string): InfraWaitDecision {
    const now = this.host.now();
    const same = this.wait !== null && this.wait.service === service && this.wait.target === target;
    const wait: InfraWait = same ? { ...this.wait!, tries: this.wait!.tries + 1, error } : { service, target, since: now, tries: 1, error };
    const decision = infraWaitDecision({ tries: wait.tries, since: wait.since, now, horizonMs: this.horizonMs });
    const began = this.wait === null || this.wait.service !== service || this.wait.target !== target;
    this.wait = decision.wait ? wait : null;
    if (began || !decision.wait) this.host.changed?.();
    // Tries 1, 2, 4, 8…: a wait of hours logs a dozen lines, not hundreds.
    if ((wait.tries & (wait.tries - 1)) === 0 || !decision.wait) {
      this.host.emit({
        kind: 'infra.waiting',
        service,
        target,
        since: new Date(wait.since).toISOString(),
        tries: wait.tries,
        error,
        message: decision.wait ? describeInfraWait(wait) : `${describeInfraWait(wait)}; gave up: ${decision.reason}`,
      });
    }
    return decision;
  }

  /** The service answered: the wait (if any) is over. */
  recovered(): void {
    const wait = this.wait;
    if (wait === null) return;
    this.wait = null;
    this.host.emit({ kind: 'infra.recovered', service: wait.service, target: wait.target, tries: wait.tries, waitedMs: this.host.now() - wait.since });
    this.host.changed?.();
  }

  /** Forgets a wait whose call nobody needs any more (an interrupted turn). */
  drop(): void {
    if (this.wait === null) return;
    this.wait = null;
    this.host.changed?.();
  }
}
