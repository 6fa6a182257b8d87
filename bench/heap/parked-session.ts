import * as session from '../../workflows/session';
import { waitForDone } from './parked';

export async function parkedWorkflow(): Promise<number> {
  await waitForDone();
  return Object.keys(session).length;
}
