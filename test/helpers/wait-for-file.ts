import { access, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Waits for `dir/name`, written by a global setup that works in the background (the workflow
 * bundle, the dev servers); fails at once with `dir/error.txt` if that setup failed, or after
 * `timeoutMs`. Returns the file's path.
 */
export async function waitForFile(dir: string, name: string, timeoutMs: number, what: string): Promise<string> {
  const file = path.join(dir, name);
  const exists = (f: string) => access(f).then(() => true, () => false);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await exists(file)) return file;
    const error = await readFile(path.join(dir, 'error.txt'), 'utf8').catch(() => null);
    if (error !== null) throw new Error(error);
    if (Date.now() > deadline) throw new Error(`${what} (${file}) did not appear in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
