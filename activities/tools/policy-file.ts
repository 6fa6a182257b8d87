// Reads the approval policy of a workspace (.keel/policy.json) and merges the session's
// options over it. Reading is I/O, so it is an activity; validating and merging are the
// pure functions of machines/policy, which the workflow can also call itself.
import { mergePolicies, parsePolicy, POLICY_FILE, type PolicyConfig, type PolicyConfigInput } from '../../machines/policy';
import { openExisting, ToolError, type Workspace } from './workspace';

export type LoadedPolicy = { ok: true; policy: PolicyConfig; source: string } | { ok: false; error: string };

export async function loadPolicy(ws: Workspace, options?: PolicyConfigInput): Promise<LoadedPolicy> {
  let fileText: string | undefined;
  try {
    const opened = await openExisting(ws, POLICY_FILE, 'read');
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
  if (options === undefined) return { ok: true, policy: file.policy, source: fileText === undefined ? 'defaults' : POLICY_FILE };
  const session = parsePolicy(options, 'session policy options');
  if (!session.ok) return session;
  return {
    ok: true,
    policy: mergePolicies(file.policy, options),
    source: fileText === undefined ? 'session options' : `${POLICY_FILE} + session options`,
  };
}
