// The body of every probe workflow in bench/heap/: it waits for a `done` signal and holds
// nothing of its own, so what a cached one costs is what its imports cost.
import { condition, defineSignal, setHandler } from '@temporalio/workflow';

const done = defineSignal('done');

export async function waitForDone(): Promise<void> {
  let over = false;
  setHandler(done, () => {
    over = true;
  });
  await condition(() => over);
}
