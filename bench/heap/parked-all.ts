import * as goal from '../../workflows/goal';
import * as all from '../../workflows/index';
import { waitForDone } from './parked';

export async function parkedWorkflow(): Promise<number> {
  await waitForDone();
  return Object.keys(all).length + Object.keys(goal).length;
}
