import * as machines from '../../machines/index';
import * as definitions from '../../workflows/definitions';
import * as input from '../../workflows/protocol/option-fields';
import { waitForDone } from './parked';

export async function parkedWorkflow(): Promise<number> {
  await waitForDone();
  return Object.keys(machines).length + Object.keys(input).length + Object.keys(definitions).length;
}
