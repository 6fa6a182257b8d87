// The KeelWaiting search attribute: what a run waits out now ("conversation-store",
// "host:<name>"; machines/infra-retry.ts infraWaitingKey), so `temporal workflow list
// --query "KeelWaiting = 'conversation-store'"` and the Web UI find every run an outage
// holds. Written when the wait begins and removed when it ends, never once per try.
//
// Determinism: writing it is a command runs recorded before did not emit, so it is behind a
// patch, asked at a run's first wait only (a run that never waits records nothing). And a
// server set up before KeelWaiting existed fails every workflow task that upserts it, so
// the run asks its worker once, by local activity (activities/waiting-attribute.ts; the
// answer is in the history, so replay takes the same branch), whether the namespace has it
// registered; where not, the run writes nothing and waits as before.
import { patched, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { createWaitingAttributeActivities } from '../activities/waiting-attribute';
import { KeelWaiting } from './search-attributes';

/** Runs recorded before KeelWaiting existed wrote no attribute when they waited. */
export const WAITING_ATTRIBUTE_PATCH = 'keel-waiting-attribute';

const { waitingAttributeRegistered } = proxyLocalActivities<ReturnType<typeof createWaitingAttributeActivities>>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export class WaitingAttribute {
  private mode: 'unasked' | 'asking' | 'on' | 'off' = 'unasked';
  private shown: string | null = null;

  /** `current`: the key of what the run waits for now, or null. */
  constructor(private readonly current: () => string | null) {}

  /** Brings the attribute up to date (call whenever what the run waits for may have changed). */
  refresh = (): void => {
    const key = this.current();
    switch (this.mode) {
      case 'off':
      case 'asking':
        return;
      case 'unasked':
        if (key === null) return;
        if (!patched(WAITING_ATTRIBUTE_PATCH)) {
          this.mode = 'off';
          return;
        }
        this.mode = 'asking';
        waitingAttributeRegistered().then(
          (registered) => {
            this.mode = registered ? 'on' : 'off';
            this.refresh();
          },
          // A worker that cannot tell (no permission to list attributes): the run writes nothing.
          () => {
            this.mode = 'off';
          },
        );
        return;
      case 'on':
        if (key === this.shown) return;
        this.shown = key;
        // null removes it: a run that waits for nothing has no KeelWaiting.
        upsertSearchAttributes([{ key: KeelWaiting, value: key }]);
        return;
      default: {
        const never: never = this.mode;
        throw new Error(`unknown mode ${JSON.stringify(never)}`);
      }
    }
  };
}
