import { condition, defineSignal, setHandler } from '@temporalio/workflow';

const done = defineSignal('done');

export async function parkedWorkflow(): Promise<void> {
  let over = false;
  setHandler(done, () => {
    over = true;
  });
  await condition(() => over);
}
