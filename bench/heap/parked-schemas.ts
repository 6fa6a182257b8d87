import { condition, defineSignal, setHandler } from '@temporalio/workflow';
import * as machines from '../../machines/index';
import * as definitions from '../../workflows/definitions';
import * as input from '../../workflows/start-input';

const done = defineSignal('done');

export async function parkedWorkflow(): Promise<number> {
  let over = false;
  setHandler(done, () => {
    over = true;
  });
  await condition(() => over);
  return Object.keys(machines).length + Object.keys(input).length + Object.keys(definitions).length;
}
