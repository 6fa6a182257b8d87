import { condition, setHandler, defineSignal } from '@temporalio/workflow';
const done = defineSignal('done');
export async function parkedWorkflow(): Promise<void> {
  let over = false;
  setHandler(done, () => { over = true; });
  await condition(() => over);
}
