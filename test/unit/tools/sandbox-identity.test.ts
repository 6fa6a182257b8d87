// As root, a sandboxed command is not root on the host: it runs as the owner of its
// workspace (inside a user namespace mapping that unprivileged uid), so root's files are
// not its own and what it writes belongs to the workspace's owner.
import { chownSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../../../activities/tools/run-tool';
import { makeWorkspace, type TestWorkspace } from './context';

const root = process.getuid?.() === 0;
const NOBODY = 65534;
let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(() => t.cleanup());

describe.runIf(root)('as root, the sandbox runs as the workspace owner', () => {
  it("reads no 0600 file of root's, writes files the workspace's owner owns, and is not uid 0 on the host", async () => {
    // The human's workspace, owned by an unprivileged user; a root-only file in it, and the system's private key.
    chownSync(path.dirname(t.dir), NOBODY, NOBODY);
    chownSync(t.dir, NOBODY, NOBODY);
    await fs.writeFile(path.join(t.dir, 'root-only.txt'), 'ROOT-ONLY-SECRET\n', { mode: 0o600 });
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: false } }), 'run_command', {
      command: 'cat /proc/self/uid_map; cat root-only.txt || echo ROOT-FILE-REFUSED; cat /etc/ssl/private/*.key 2>/dev/null | head -c 40; echo made > made.txt && echo WRITE-OK',
    });
    expect(result.content).toContain('ROOT-FILE-REFUSED');
    expect(result.content).not.toContain('ROOT-ONLY-SECRET');
    expect(result.content).not.toContain('PRIVATE KEY');
    expect(result.content).toContain('WRITE-OK');
    expect((await fs.stat(path.join(t.dir, 'made.txt'))).uid).toBe(NOBODY);
  });

  it('with the network granted, the proxy socket is reachable by that user', async () => {
    chownSync(path.dirname(t.dir), NOBODY, NOBODY);
    chownSync(t.dir, NOBODY, NOBODY);
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: true } }), 'run_command', { command: 'curl -sS -m 5 -p http://127.0.0.1:9/ 2>&1; true' });
    expect(result.content).toMatch(/403|Keel proxy refused/);
  });
});
