import { condition, defineSignal, setHandler } from '@temporalio/workflow';
import * as session from '../../workflows/session';

const done = defineSignal('done');

export async function parkedWorkflow(): Promise<number> {
  let over = false;
  setHandler(done, () => {
    over = true;
  });
  await condition(() => over);
  return Object.keys(session).length;
}
