import { access, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Waits for `dir/name`, written by a global setup that works in the background (the workflow
 * bundle, the dev servers) or by another test file (a shared fixture bundle); fails at once with
 * the text of `dir/<errorName>` if its writer failed, or after `timeoutMs`. Returns the file's path.
 */
export async function waitForFile(dir: string, name: string, timeoutMs: number, what: string, errorName = 'error.txt'): Promise<string> {
  const file = path.join(dir, name);
  const exists = (f: string) => access(f).then(() => true, () => false);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await exists(file)) return file;
    const error = await readFile(path.join(dir, errorName), 'utf8').catch(() => null);
    if (error !== null) throw new Error(error);
    if (Date.now() > deadline) throw new Error(`${what} (${file}) did not appear in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
