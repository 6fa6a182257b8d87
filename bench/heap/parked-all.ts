import { condition, setHandler, defineSignal } from '@temporalio/workflow';
import * as all from '../../workflows/index';
const done = defineSignal('done');
export async function parkedWorkflow(): Promise<number> {
  let over = false;
  setHandler(done, () => { over = true; });
  await condition(() => over);
  return Object.keys(all).length;
}
