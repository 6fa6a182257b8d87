// A workspace that vanished is an error, not a fresh empty directory: the store's
// `mkdir -p` of `<workspace>/.keel/store/segments/ab` re-created a deleted workspace, and
// the agent then worked in an empty directory with no error.
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendSegment } from '../../activities/conversation-store';
import { ConversationStoreError } from '../../activities/store/errors';
import { LocalDirectoryStore } from '../../activities/store/local';
import { ensureKeelDir } from '../../activities/tools/sandbox';
import { openWorkspace } from '../../activities/tools/workspace';
import { classifyInfraError } from '../../machines/infra-retry';

describe('a deleted workspace', () => {
  it('is not re-created by the store, the sandbox or the tools: each says it is gone', async () => {
    const parent = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-gone-')));
    const ws = path.join(parent, 'ws');
    await fs.mkdir(ws);
    const store = new LocalDirectoryStore(path.join(ws, '.keel', 'store'));
    // A store may be made in a workspace that is there (its .keel too).
    expect(await appendSegment(store, null, [{ role: 'user', content: 'hi' }])).toMatch(/^[0-9a-f]{64}$/);
    await fs.rm(ws, { recursive: true, force: true });

    const fresh = new LocalDirectoryStore(path.join(ws, '.keel', 'store'));
    const failed = await appendSegment(fresh, null, [{ role: 'user', content: 'again' }]).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ConversationStoreError);
    expect((failed as ConversationStoreError).message).toContain(`${ws}, which holds the store, is gone (deleted or unmounted); a workspace is not re-created empty`);
    expect((failed as ConversationStoreError).code).toBe('workspace_gone');
    // Not waited out: a human restores it or moves the run.
    expect((failed as ConversationStoreError).transient).toBe(false);
    expect(classifyInfraError('workspace_gone').verdict).toBe('permanent');

    await expect(openWorkspace(ws)).rejects.toThrow(`workspace ${ws} is gone (deleted or unmounted); Keel does not re-create it empty`);
    await expect(ensureKeelDir(ws)).rejects.toThrow(`workspace ${ws} is gone`);
    expect(existsSync(ws)).toBe(false);
    await fs.rm(parent, { recursive: true, force: true });
  });
});
