// Reads the approval policy of a workspace (.keel/policy.json) and bounds it by the
// session's start options (the file may only narrow them). Reading is I/O, so it is an activity; validating and merging are the
// pure functions of machines/policy, which the workflow can also call itself.
import { parsePolicy, POLICY_FILE, resolvePolicy, type PolicyConfig, type PolicyConfigInput, type PolicyOrigin } from '../../machines/policy';
import { openExisting, ToolError, type Workspace } from './workspace';

export type LoadedPolicy = { ok: true; policy: PolicyConfig; source: string; origin: PolicyOrigin } | { ok: false; error: string };

export async function loadPolicy(ws: Workspace, options?: PolicyConfigInput): Promise<LoadedPolicy> {
  let fileText: string | undefined;
  try {
    const opened = await openExisting(ws, POLICY_FILE, 'read', { keelOwn: true });
    try {
      fileText = await opened.handle.readFile('utf8');
    } finally {
      await opened.handle.close();
    }
  } catch (error) {
    if (!(error instanceof ToolError) || !/^no such file/.test(error.message)) {
      return { ok: false, error: `cannot read ${POLICY_FILE}: ${(error as Error).message}` };
    }
  }
  let raw: unknown = {};
  if (fileText !== undefined) {
    try {
      raw = JSON.parse(fileText);
    } catch (error) {
      return { ok: false, error: `invalid ${POLICY_FILE}: not JSON (${(error as Error).message})` };
    }
  }
  const file = parsePolicy(raw, POLICY_FILE);
  if (!file.ok) return file;
  if (options !== undefined) {
    const session = parsePolicy(options, 'session policy options');
    if (!session.ok) return session;
  }
  // The start options (or the defaults) bound what the file may say: it only narrows.
  const { policy, origin } = resolvePolicy(fileText === undefined ? null : (raw as PolicyConfigInput), options);
  const source = [fileText === undefined ? undefined : POLICY_FILE, options === undefined ? 'defaults' : 'session options'].filter(Boolean).join(' within ');
  return { ok: true, policy, source, origin };
}
