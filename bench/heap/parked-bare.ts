import { waitForDone } from './parked';

export async function parkedWorkflow(): Promise<void> {
  await waitForDone();
}
