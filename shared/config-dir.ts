// Where Keel keeps its own per-user settings (API token hashes, the approver key): read by the
// server (server/auth.ts) and by every payload codec (shared/approver-proof.ts: the worker's and
// the clients'), so it lives in shared/, which the compiled worker and its image carry without server/.
import os from 'node:os';
import path from 'node:path';

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KEEL_CONFIG_DIR) return env.KEEL_CONFIG_DIR;
  return path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'keel');
}
