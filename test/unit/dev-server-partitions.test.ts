// Keel's dev servers give each task queue one partition (worker/dev-server.ts), but never to
// a database file made with four: tasks queued in the other three would never be read.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { onePartitionFlags } from '../../worker/dev-server';

const ONE = ['--dynamic-config-value', 'matching.numTaskqueueReadPartitions=1', '--dynamic-config-value', 'matching.numTaskqueueWritePartitions=1'];
let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-partitions-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('task queue partitions of a dev server', () => {
  it('one for an in-memory server', async () => {
    expect(await onePartitionFlags(undefined)).toEqual(ONE);
  });

  it('one for a new database file, and again when it is reopened', async () => {
    const db = path.join(dir, 'data', 'temporal.sqlite');
    expect(await onePartitionFlags(db)).toEqual(ONE);
    await fs.writeFile(db, 'made by the server');
    expect(await onePartitionFlags(db)).toEqual(ONE);
  });

  it("the server's default for a database file made before (no marker beside it)", async () => {
    const db = path.join(dir, 'temporal.sqlite');
    await fs.writeFile(db, 'made by an older Keel');
    expect(await onePartitionFlags(db)).toEqual([]);
    expect(await fs.readdir(dir)).toEqual(['temporal.sqlite']);
  });
});
